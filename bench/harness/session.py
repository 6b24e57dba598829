"""What every bench does at its start and end: the machine's speed and load, peak memory, its
own embedded PostgreSQL stopped for sure.

    with tempfile.TemporaryDirectory(prefix="fable-bench-") as tmp, session(Path(tmp)) as s:
        ...  # s.database_url, s.pg_dir; s.machine and s.memory are read after the block

On entry: a :class:`~bench.harness.machine.Machine` snapshot (reference speed, process round trip,
load average), the embedded server started in ``tmp/pg`` (unless a ``database_url`` is given),
a :class:`~bench.harness.memory.PeakMemory` sampler over the bench's processes (this one and its
children: app servers, loaders, ``fable mcp``) and PostgreSQL's (the postmaster and every
backend), and SIGINT and SIGTERM raised where the main thread is (``KeyboardInterrupt``,
``SystemExit``), so that every ``finally`` runs even inside ``asyncio.run``. On the way out,
even on failure: the sampler and the server stopped; on success, the machine's end snapshot.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TypeVar

import psutil

from bench.harness.bench import Measured
from bench.harness.machine import Machine, record
from bench.harness.memory import PeakMemory
from bench.harness.postgres import embedded, postgres_pids
from fable_core.config import Settings, load_settings
from fable_core.runtime import Fable

R = TypeVar("R")

__all__ = ["Session", "on_fable", "on_one_fable", "session"]


@dataclass
class Session:
    machine: Machine
    memory: PeakMemory
    database_url: str
    pg_dir: Path | None  # None for an external server (``--database-url``)

    def measured(self, result: R) -> Measured[R]:
        """``result`` with this session's machine and memory (read once the session is over)."""
        return Measured(result, self.machine, self.memory)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """Unwind from wherever the main thread is: asyncio's own SIGINT handling only cancels the
    main task, which a client library may absorb, and SIGTERM would skip every ``finally``."""
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


def python_pids() -> list[int]:
    """This process and its descendants that are not PostgreSQL (servers, loaders, stdio
    servers, the fake model server)."""
    me = psutil.Process()
    found = [me.pid]
    for child in me.children(recursive=True):
        try:
            if child.name() != "postgres":
                found.append(child.pid)
        except psutil.Error:
            continue
    return found


@contextmanager
def session(tmp: Path, database_url: str | None = None, memory_interval: float = 1.0) -> Iterator[Session]:
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    machine = record()
    try:
        with ExitStack() as stack:
            pg_dir = None
            if not database_url:
                pg_dir = tmp / "pg"
                database_url = stack.enter_context(embedded(pg_dir))
            memory = PeakMemory({"Python": python_pids, "PostgreSQL": lambda: postgres_pids(pg_dir)},
                                memory_interval)
            memory.sample()
            memory.start()
            stack.callback(memory.stop)
            yield Session(machine, memory, database_url, pg_dir)
        machine.finish()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def on_one_fable(work: Callable[[Fable], Awaitable[R]]) -> Measured[R]:
    """Run ``work`` on one Fable (no model) over a fresh embedded PostgreSQL in a bench session,
    seeded for repeatable data: what the benches that call tools in-process share."""
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    random.seed(1)
    with tempfile.TemporaryDirectory(prefix="fable-bench-") as tmp, session(Path(tmp)) as bench:
        settings = load_settings({}, database_url=bench.database_url, fable_data_dir=Path(tmp), llm_provider="none")
        result = asyncio.run(on_fable(settings, work))
    return bench.measured(result)


async def on_fable(settings: Settings, work: Callable[[Fable], Awaitable[R]]) -> R:
    """``work`` on a Fable opened on ``settings`` (migrating it), closed after it whatever happens."""
    fable = await Fable.open(settings)
    try:
        return await work(fable)
    finally:
        await fable.close()
