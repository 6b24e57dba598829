"""The test half of "nothing heavy on the event loop": a test fails when, while it runs, one
callback of the event loop spent more than :data:`LIMIT` seconds of the loop thread's CPU.

CPU time, not wall time: a loaded machine makes callbacks slower without making them heavier,
and the suite must stay green there; what it catches is work that would stall every other user
of a process on any machine (a quadratic regex, a render, a diff on the loop). Each callback is
timed where asyncio runs it (``Handle._run``, which every callback and every task step goes
through); the production half is :mod:`fable_core.infra.loopwatch`.

Only a test's own phase counts: the setup of session fixtures (a Fable opening, its first
imports) happens once per process before anything is served. Garbage collection is not counted
against the callback it happens to interrupt (it is the whole process's, and a Fable freezes
what it allocated at start, :meth:`fable_core.runtime.Fable.open`); neither are the tasks of the
browser tests' own driver (Playwright's, and the route handlers of ``tests/browser/conftest.py``).
A test that exists to do something heavy on purpose says so with ``@pytest.mark.heavy_loop``
and a reason. A callback found slow is reported with where a watchdog thread saw it spend its
time.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

__all__ = ["LIMIT", "pytest_configure", "pytest_runtest_call"]

LIMIT = 0.2  # seconds of the loop thread's CPU in one callback
SAMPLE_EVERY = 0.05  # seconds between looks at a callback that runs long, for where it spends them
_slow: list[tuple[str, float]] = []
_state = {"watching": False}  # set during a test's own phase
_original = asyncio.events.Handle._run
_running: dict[int, tuple[float, Counter[str]]] = {}  # thread id -> (wall start, sampled places)
_in_gc: dict[int, float] = {}  # thread id -> CPU time spent collecting garbage so far
_gc_started: dict[int, float] = {}
HARNESS = ("/site-packages/playwright/", "/tests/browser/conftest.py")  # the test's driver, not the app


def _collecting(phase: str, info: dict[str, Any]) -> None:
    thread = threading.get_ident()
    if phase == "start":
        _gc_started[thread] = time.thread_time()
    elif (started := _gc_started.pop(thread, None)) is not None:
        _in_gc[thread] = _in_gc.get(thread, 0.0) + time.thread_time() - started


def _timed(self: asyncio.events.Handle) -> None:
    if not _state["watching"]:
        _original(self)
        return
    thread = threading.get_ident()
    start, collected = time.thread_time(), _in_gc.get(thread, 0.0)
    places: Counter[str] = Counter()
    _running[thread] = (time.monotonic(), places)
    try:
        _original(self)
    finally:
        _running.pop(thread, None)
        spent = time.thread_time() - start - (_in_gc.get(thread, 0.0) - collected)
        if spent > LIMIT and not _harness(self):
            where = "; ".join(f"{n}x {place}" for place, n in places.most_common(2))
            _slow.append((_describe(self) + (f"; sampled in {where}" if where else ""), spent))


def _sample() -> None:
    """A watchdog: where each callback that has run past half the limit is spending its time."""
    while True:
        time.sleep(SAMPLE_EVERY)
        frames = sys._current_frames()
        now = time.monotonic()
        for thread, (started, places) in list(_running.items()):
            if now - started > LIMIT / 2 and (frame := frames.get(thread)) is not None:
                try:
                    places[_place(frame)] += 1
                except Exception as e:  # noqa: BLE001 - a diagnostic: never the reason a test fails
                    places[f"(not sampled: {e!r})"] += 1


def _place(frame: Any) -> str:
    """The innermost frames of the project (fable_*, tests), else the innermost three."""
    stack = traceback.extract_stack(frame)
    stack = [f for f in stack if not f.filename.endswith("loopguard.py") and not f.filename.startswith("<")]
    ours = [f for f in stack if "/site-packages/" not in f.filename and "/lib/python3" not in f.filename]
    chosen = (ours or stack)[-3:]
    return " < ".join(f"{'/'.join(f.filename.split('/')[-2:])}:{f.lineno} {f.name}" for f in reversed(chosen))


def _harness(handle: asyncio.events.Handle) -> bool:
    owner = getattr(getattr(handle, "_callback", None), "__self__", None)
    code = getattr(owner.get_coro(), "cr_code", None) if isinstance(owner, asyncio.Task) else None
    return code is not None and any(part in code.co_filename for part in HARNESS)


def _describe(handle: asyncio.events.Handle) -> str:
    """The callback, by the coroutine it ran a step of where it was a task's."""
    callback = getattr(handle, "_callback", None)
    owner = getattr(callback, "__self__", None)
    if isinstance(owner, asyncio.Task):
        coro = owner.get_coro()
        frame = getattr(coro, "cr_frame", None)
        where = f" at {frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else ""
        return f"a step of {getattr(coro, '__qualname__', coro)!s}{where} (task {owner.get_name()})"
    return repr(handle)[:400]


def pytest_configure(config: pytest.Config) -> None:
    asyncio.events.Handle._run = _timed  # type: ignore[method-assign]
    gc.callbacks.append(_collecting)
    threading.Thread(target=_sample, name="loopguard-sampler", daemon=True).start()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[Any]:
    _slow.clear()
    _state["watching"] = item.get_closest_marker("heavy_loop") is None
    try:
        result = yield
    finally:
        _state["watching"] = False
    if _slow:
        worst = max(_slow, key=lambda entry: entry[1])
        pytest.fail(f"{len(_slow)} event-loop callback(s) spent more than {LIMIT * 1000:.0f} ms of CPU; the "
                    f"worst, {worst[1] * 1000:.0f} ms: {worst[0]}", pytrace=False)
    return result
