"""Background jobs: registration refuses misuse, a run is claimed through PostgreSQL (one at a
time, whoever asks), failures are logged and never stop the scheduler, a wake during a run
runs it again, and only a Fable opened to run jobs starts a scheduler."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from sqlalchemy import func, select
from support.pace import scaled

from fable_core.runtime import Fable
from fable_core.tools.jobs import _LOCK_CLASS, Job, Scheduler, job, run_job


async def _noop(fable: Fable) -> None:
    return None


@pytest.mark.parametrize(("options", "message"), [
    ({}, "give one"),
    ({"every": 5, "cron": "* * * * *"}, "give one"),
    ({"every": 0}, "positive"),
    ({"cron": "every tuesday"}, "Wrong number of fields"),
])
def test_a_job_needs_one_valid_schedule(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        job(jobs={}, **options)(_noop)


def test_a_job_is_async_and_named_once() -> None:
    table: dict[str, Job] = {}
    with pytest.raises(TypeError, match="must be an async function"):
        job(every=1, jobs=table)(lambda fable: None)  # type: ignore[arg-type,return-value]
    assert job(every=1, jobs=table)(_noop) is _noop  # returned unchanged
    with pytest.raises(ValueError, match="already registered"):
        job(cron="0 3 * * *", jobs=table, name="_noop")(_noop)


async def test_a_run_is_claimed_one_at_a_time_across_connections(fable: Fable) -> None:
    table: dict[str, Job] = {}
    started, go = asyncio.Event(), asyncio.Event()
    runs: list[int] = []

    @job(every=60, jobs=table)
    async def slow(_: Fable) -> None:
        runs.append(1)
        started.set()
        await go.wait()

    first = asyncio.create_task(run_job(fable, "slow", table))
    await started.wait()
    assert await run_job(fable, "slow", table) is False  # held by the first run
    # another process holds it the same way: a session of its own with the advisory lock
    go.set()
    assert await first is True
    async with fable.db.engine.connect() as other:
        await other.scalar(select(func.pg_advisory_lock(_LOCK_CLASS, table["slow"].lock_key)))
        assert await run_job(fable, "slow", table) is False
        await other.scalar(select(func.pg_advisory_unlock(_LOCK_CLASS, table["slow"].lock_key)))
    assert await run_job(fable, "slow", table) is True
    assert len(runs) == 2


async def test_a_failing_job_is_logged_and_runs_again_on_schedule(
        fable: Fable, caplog: pytest.LogCaptureFixture) -> None:
    table: dict[str, Job] = {}
    runs: list[int] = []
    twice = asyncio.Event()

    @job(every=0.05, jobs=table)
    async def broken(_: Fable) -> None:
        runs.append(1)
        if len(runs) >= 2:
            twice.set()
        raise RuntimeError("boom")

    scheduler = Scheduler(fable, table)
    with caplog.at_level(logging.ERROR, logger="fable_core.tools.jobs"):
        scheduler.start()
        try:
            await asyncio.wait_for(twice.wait(), scaled(10))
        finally:
            await scheduler.close()
    assert "job broken failed" in caplog.text and "boom" in caplog.text


async def test_a_wake_during_a_run_runs_it_once_more(fable: Fable) -> None:
    table: dict[str, Job] = {}
    runs: list[int] = []
    started, go = asyncio.Event(), asyncio.Event()

    @job(every=3600, jobs=table)
    async def counted(_: Fable) -> None:
        runs.append(1)
        started.set()
        await go.wait()

    scheduler = Scheduler(fable, table)
    try:
        scheduler.wake("counted")
        await started.wait()
        scheduler.wake("counted")
        scheduler.wake("counted")  # coalesced with the one before
        go.set()
        await scheduler.idle()
    finally:
        await scheduler.close()
    assert len(runs) == 2


async def test_only_a_fable_opened_to_run_jobs_schedules_them(fable: Fable) -> None:
    assert fable.jobs is None  # the tests' Fable, like fable mcp and fable call
    running = await Fable.open(fable.settings, migrate=False, jobs=True)
    try:
        assert running.jobs is not None
        assert {"due_reminders", "send_pushes"} <= set(running.jobs._jobs)
        await asyncio.wait_for(running.jobs.listener.listening.wait(), scaled(10))
    finally:
        await running.close()
