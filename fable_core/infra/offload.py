"""CPU-heavy work off the event loop: parsing, rendering, diffing, extracting and importing.

One slow callback on the event loop stalls every request of every user of the process: a
12,000-tag page through a quadratic regex took others' reads from 18 ms to 28 s. So every such
step runs through :func:`offload`, in one bounded pool of worker threads, with a
:class:`Budget` per kind of work:

- a **size budget**, checked before anything runs (``PayloadTooLarge``, 413);
- a **time budget**: the caller gets its answer or, when it runs out, a clear error
  (``PayloadTooLarge``: the input is too large or too intricate to be worth the wait);
- a **bound on the pool**: :data:`THREADS` workers and at most :data:`MAX_WAITING` calls
  waiting; beyond that a call is refused at once (``RateLimited``, 429) rather than queued
  behind a flood, like the password hasher's pool (:mod:`fable_core.identity.passwords`).

Threads, not processes: the work is pure Python over text already in memory, a thread costs
about 50 µs to hand over to (a process: a copy of the input and a second interpreter's memory,
which a personal instance cannot spare), and while a worker holds the GIL the loop still gets
it back within the interpreter's switch interval (5 ms), so the process slows for everyone a
little instead of stopping for one. Python cannot stop a thread: a call past its time budget
keeps its worker until it finishes, and it still counts against the bound until then. That is
why the algorithms behind it are linear (heading ids by a counter, skipped HTML tags by counts,
diffs by line hashes) and why the size budgets are set so that the largest input finishes in
seconds: together they bound what a hostile input can cost.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from fable_core.errors import PayloadTooLarge, RateLimited

__all__ = ["MAX_WAITING", "THREADS", "Budget", "offload"]

THREADS = max(2, min(4, os.cpu_count() or 2))
MAX_WAITING = 32
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Budget:
    """What one kind of heavy work may cost: ``what`` names it in errors ("rendering markdown")."""

    what: str
    max_size: int  # characters or bytes of input
    seconds: float
    unit: str = "characters"


class _Pool:
    def __init__(self, threads: int, waiting: int) -> None:
        self._threads = threads
        self._limit = threads + waiting
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self.in_flight = 0  # calls handed to the pool and not finished, abandoned ones included

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:  # made on first use: most commands never need it
            self._executor = ThreadPoolExecutor(max_workers=self._threads, thread_name_prefix="fable-heavy")
        return self._executor

    def _done(self, _: object) -> None:
        with self._lock:
            self.in_flight -= 1

    async def run(self, budget: Budget, fn: Callable[[], T]) -> T:
        with self._lock:
            if self.in_flight >= self._limit:
                raise RateLimited(f"the server is busy with other heavy work ({budget.what}); retry in a moment",
                                  retry_after=1)
            self.in_flight += 1
        future = self._pool().submit(fn)
        future.add_done_callback(self._done)
        try:
            async with asyncio.timeout(budget.seconds):
                return await asyncio.wrap_future(future)
        except TimeoutError:
            future.cancel()  # a call still waiting for a thread never starts
            raise PayloadTooLarge(f"{budget.what} took longer than {budget.seconds:g} s, its time budget: the "
                                  "input is too large or too intricate", budget_seconds=budget.seconds) from None


_pool = _Pool(THREADS, MAX_WAITING)


async def offload(budget: Budget, size: int, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on a worker thread, within ``budget``; ``size`` is its input's,
    in the budget's unit."""
    if size > budget.max_size:
        raise PayloadTooLarge(f"{budget.what}: the input is {size:,} {budget.unit}, more than the "
                              f"{budget.max_size:,} allowed", max_size=budget.max_size)
    return await _pool.run(budget, functools.partial(fn, *args, **kwargs))
