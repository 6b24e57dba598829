"""Background jobs: registered once like tools, scheduled in process, claimed through PostgreSQL.

A job is an ``async def`` taking the running :class:`~fable_core.runtime.Fable`, registered
with :func:`job` at import time (in a capability's module) with a schedule: ``every`` so many
seconds, or a ``cron`` expression (UTC). ``wake`` names a PostgreSQL channel: a NOTIFY on it
(sent in a transaction, so delivered only once that commits) runs the job at once, in every
process that runs jobs: how a notification committed anywhere reaches the push sender within
milliseconds, while its schedule sweeps up whatever a lost connection missed.

    @job(every=60)
    async def due_reminders(fable: Runtime) -> None: ...

**Claims: once per due time.** Each run first takes a PostgreSQL advisory lock named after the
job (``pg_try_advisory_lock``, on a connection held for the run): several replicas, or a run and
a wake in one process, never run the same job at once. Every process computes the same due
times (an ``every`` schedule is aligned on the epoch, a cron one is UTC), and a scheduled run
records the due time it ran for in ``job_runs`` before it lets the lock go: a replica whose tick
comes a moment later finds that due time done and skips it. One that finds the lock held waits
(polling every :data:`CLAIM_POLL` seconds, holding no connection) until the holder records the
due time, or until the lock is free and the due time still not done: the holder died (its
locks went with its connections) or was stopped mid-run, and this replica runs the job instead.
A run that fails counts as run (logged; the next due time tries again); only a run cut short
does not. A wake (NOTIFY) is no due time: whoever gets the lock runs, the others skip. Jobs
must still be idempotent across runs (a reminder carries a once-only key; a push is claimed per
row).

``FABLE_JOB_EVERY`` (``job=seconds``, comma-separated) runs named jobs every so many seconds
instead of on their own schedules (:func:`scheduled`): the same in every replica, since each
computes the due times from it.

**Who runs them.** ``fable serve`` opens its :class:`Fable` with ``jobs=True``, and the jobs
capability's install hook (:func:`install`) starts a :class:`Scheduler` there (APScheduler's
``AsyncIOScheduler`` for the timing). ``fable mcp`` over stdio and ``fable call`` do not: they
live as long as a client or a command and may be many at once; what they commit (a share, a
notification) is picked up by the server's jobs, woken by the same NOTIFY. Tests run a job once,
deterministically, with :func:`run_job`.

A failing run is logged with its traceback and never ends the scheduler or the process; the
next scheduled run tries again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert

from fable_core.config import Settings
from fable_core.db.database import Database
from fable_core.db.errors import log_once
from fable_core.db.listener import Listener
from fable_core.db.models import JobRun
from fable_core.errors import FableError, InvalidInput
from fable_core.tools.runtime import Part

if TYPE_CHECKING:
    from fable_core.tools.runtime import Closer, Runtime

__all__ = ["JOBS", "SCHEDULER", "Job", "Scheduler", "install", "job", "run_job", "run_woken", "scheduled"]

JobFunction = Callable[["Runtime"], Awaitable[None]]
F = TypeVar("F", bound=JobFunction)
_LOCK_CLASS = 0x46424C45  # "FBLE": the first key of every job's advisory lock
_log = logging.getLogger(__name__)
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)  # where every ``every`` schedule's grid starts, in every process
CLAIM_POLL = 1.0  # seconds between looks at a due run another process holds


@dataclass(frozen=True, slots=True)
class Job:
    name: str
    fn: JobFunction
    every: float | None = None
    cron: str | None = None
    wake: str | None = None

    @property
    def lock_key(self) -> int:
        """The second key of the job's advisory lock: its name's CRC-32, as a signed int4."""
        return zlib.crc32(self.name.encode()) - 2**31

    def trigger(self) -> IntervalTrigger | CronTrigger:
        if self.cron is not None:
            return CronTrigger.from_crontab(self.cron, timezone=UTC)
        assert self.every is not None
        return IntervalTrigger(seconds=self.every, start_date=_EPOCH, timezone=UTC)

    def due(self, now: datetime) -> datetime:
        """The due time a tick at ``now`` runs for: the latest scheduled time at or before it,
        the same in every process."""
        if self.every is not None:
            steps = (now - _EPOCH) // timedelta(seconds=self.every)
            return _EPOCH + steps * timedelta(seconds=self.every)
        trigger = self.trigger()
        found = None
        at = trigger.get_next_fire_time(None, now - timedelta(hours=1))
        while at is not None and at <= now:
            found = at
            at = trigger.get_next_fire_time(at, at + timedelta(seconds=1))
        return found or now.replace(second=0, microsecond=0)  # a tick over an hour late: its minute

    def after(self, due: datetime) -> datetime:
        """The due time after ``due``."""
        if self.every is not None:
            return due + timedelta(seconds=self.every)
        following: datetime | None = self.trigger().get_next_fire_time(due, due + timedelta(seconds=1))
        assert following is not None
        return following


JOBS: dict[str, Job] = {}


def job(*, every: float | None = None, cron: str | None = None, wake: str | None = None,
        name: str | None = None, jobs: dict[str, Job] | None = None) -> Callable[[F], F]:
    """Register an async function as a background job (exactly one of ``every`` seconds or a
    ``cron`` expression in UTC) and return it unchanged. ``jobs``: another table than
    :data:`JOBS` (tests)."""
    if (every is None) == (cron is None):
        raise ValueError("a job runs either every so many seconds or on a cron schedule: give one")
    if every is not None and every <= 0:
        raise ValueError(f"every must be positive, not {every!r}")
    if cron is not None:
        CronTrigger.from_crontab(cron, timezone=UTC)  # refuse a bad expression at import time

    def register(fn: F) -> F:
        _require_async(fn)
        table = JOBS if jobs is None else jobs
        job_name = name or fn.__name__
        if job_name in table:
            raise ValueError(f"job {job_name!r} is already registered")
        table[job_name] = Job(job_name, fn, every, cron, wake)
        return fn

    return register


def _require_async(fn: Callable[..., object]) -> None:
    # a function of its own: the check narrows ``fn``, and the decorator returns it as it came
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"job {getattr(fn, '__qualname__', fn)} must be an async function")


@asynccontextmanager
async def _claim(db: Database, j: Job) -> AsyncIterator[tuple[bool, Any]]:
    """Whether this run holds the job's lock (held until the block ends), and the connection."""
    conn = db.engine.execution_options(isolation_level="AUTOCOMMIT").connect()  # a session lock, no transaction
    with db.translated():  # the database away: Unavailable (one line logged), not a driver traceback
        await conn.start()
    held = False
    try:
        with db.translated():
            held = bool(await conn.scalar(select(func.pg_try_advisory_lock(_LOCK_CLASS, j.lock_key))))
        yield held, conn
    finally:
        try:
            if held:
                await _unlock(conn, j)
        finally:
            await conn.close()


async def _unlock(conn: Any, j: Job) -> None:
    try:
        await conn.execute(select(func.pg_advisory_unlock(_LOCK_CLASS, j.lock_key)))
    except BaseException:
        # A pooled connection must not keep the lock: closing it is what releases it now.
        await conn.invalidate()
        raise


async def run_job(fable: Runtime, name: str, jobs: dict[str, Job] | None = None, *,
                  due: datetime | None = None, poll: float | None = None) -> bool:
    """Run job ``name`` once, now; True if it ran here (failed or not). A failure is logged,
    never raised. Without ``due`` (a wake, a test): unless another run holds it. With ``due``
    (a scheduled tick): unless some process already ran it for that due time; while another
    holds it, wait (looking every ``poll`` seconds, :data:`CLAIM_POLL` by default) to see it
    done, or to run it if the holder went away without, until the next due time."""
    j = (JOBS if jobs is None else jobs)[name]
    try:
        return await _run_once(fable, j, due, CLAIM_POLL if poll is None else poll)
    except FableError as e:  # the database away: one line a minute, not a traceback a tick; the next tick tries again
        log_once(_log, logging.WARNING, f"job {name} failed: {e.message}")
        return True
    except Exception:  # noqa: BLE001 - a bug: logged with its traceback; the next tick tries again
        _log.exception("job %s failed", name)
        return True


async def run_woken(fable: Runtime, channel: str, jobs: dict[str, Job] | None = None) -> None:
    """Run every job woken by ``channel`` here, now, one after the other (each unless another
    run holds it): what a process that may run no jobs does when it cannot wait for those that
    do (a follower that finds a dead process's answer runs the sweeps)."""
    for j in list((JOBS if jobs is None else jobs).values()):
        if j.wake == channel:
            await run_job(fable, j.name, jobs)


async def _run_once(fable: Runtime, j: Job, due: datetime | None, poll: float) -> bool:
    until = j.after(due) if due is not None else None
    while True:
        async with _claim(fable.db, j) as (held, conn):
            if held:
                if due is not None and await _done(conn, j, due):
                    return False
                try:
                    await j.fn(fable)
                except Exception:  # noqa: BLE001 - a failed run is logged; the next one tries again
                    _log.exception("job %s failed", j.name)
                if due is not None:
                    await _record(conn, j, due)
                return True
            if due is None or until is None:
                _log.debug("job %s is running elsewhere; skipping", j.name)
                return False
            if await _done(conn, j, due):
                return False
        if datetime.now(UTC) >= until:  # the next tick takes over
            return False
        await asyncio.sleep(poll)


async def _done(conn: Any, j: Job, due: datetime) -> bool:
    last = await conn.scalar(select(JobRun.due).where(JobRun.name == j.name))
    return last is not None and last >= due


async def _record(conn: Any, j: Job, due: datetime) -> None:
    row = insert(JobRun).values(name=j.name, due=due)
    await conn.execute(row.on_conflict_do_update(
        index_elements=[JobRun.name],
        set_={"due": func.greatest(JobRun.due, row.excluded.due), "finished_at": func.now()}))


class Scheduler:
    """Runs the registered jobs on their schedules and on their wake channels, in this process."""

    def __init__(self, fable: Runtime, jobs: dict[str, Job] | None = None) -> None:
        self._fable = fable
        self._jobs = dict(JOBS if jobs is None else jobs)
        self._timer = AsyncIOScheduler(timezone=UTC)
        self._running: dict[str, asyncio.Task[None]] = {}
        self._again: dict[str, datetime | None] = {}
        self._closed = False
        channels: dict[str, list[str]] = {}
        for j in self._jobs.values():
            if j.wake is not None:
                channels.setdefault(j.wake, []).append(j.name)
        self.listener = Listener(fable.db.url, {
            channel: self._waker(names) for channel, names in channels.items()})

    def _waker(self, names: list[str]) -> Callable[[str | None], None]:
        def wake(_payload: str | None) -> None:
            for name in names:
                self.wake(name)

        return wake

    def start(self) -> None:
        for j in self._jobs.values():
            self._timer.add_job(self._tick, j.trigger(), args=[j.name], id=j.name, name=j.name,
                                max_instances=1, coalesce=True, misfire_grace_time=None)
        self._timer.start()
        self.listener.start()

    async def _tick(self, name: str) -> None:
        self.wake(name, due=self._jobs[name].due(datetime.now(UTC)))

    def wake(self, name: str, *, due: datetime | None = None) -> None:
        """Run job ``name`` now (for due time ``due``, a scheduled tick); if it is running here,
        once more when it ends (what woke it may have committed after the run looked)."""
        if self._closed:
            return
        if name in self._running:
            self._again[name] = max(filter(None, (due, self._again.get(name))), default=None)
            return
        task = asyncio.get_running_loop().create_task(self._run(name, due), name=f"fable-job-{name}")
        self._running[name] = task

    async def _run(self, name: str, due: datetime | None) -> None:
        try:
            while True:
                await run_job(self._fable, name, self._jobs, due=due)
                if name not in self._again:
                    return
                due = self._again.pop(name)
        finally:
            self._running.pop(name, None)

    async def idle(self) -> None:
        """Until no job runs here (tests)."""
        while self._running:
            await asyncio.gather(*self._running.values(), return_exceptions=True)

    async def close(self) -> None:
        self._closed = True
        if self._timer.running:
            self._timer.shutdown(wait=False)
        await self.listener.close()
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


SCHEDULER: Part[Scheduler] = Part("jobs")
"""This process's scheduler, when it runs the background jobs (``fable serve``)."""


def scheduled(settings: Settings, jobs: dict[str, Job] | None = None) -> dict[str, Job]:
    """The jobs with the schedules ``FABLE_JOB_EVERY`` gives some of them instead of their own."""
    table = dict(JOBS if jobs is None else jobs)
    for entry in settings.fable_job_every:
        name, _, seconds = entry.rpartition("=")
        name = name.strip()
        if name not in table:
            raise InvalidInput(f"FABLE_JOB_EVERY names no job {name!r}; the jobs are: {', '.join(sorted(table))}",
                               field="FABLE_JOB_EVERY")
        table[name] = dataclasses.replace(table[name], every=float(seconds), cron=None)
    return table


async def install(fable: Runtime) -> Closer | None:
    """The jobs capability's hook: a scheduler, in a process opened to run jobs."""
    if not fable.runs_jobs:
        return None
    scheduler = Scheduler(fable, scheduled(fable.settings))
    scheduler.start()
    fable.install(SCHEDULER, scheduler)
    return scheduler.close
