"""Jobs exactly once per due time across processes on one database: two Fable runtimes whose
schedulers both fire a job for the same due time run it once; a process killed (-9) mid-job
leaves that due time to the other, which runs it."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from datetime import UTC, datetime, timedelta

from support.pace import scaled

from fable_core.config import Settings
from fable_core.runtime import Fable
from fable_core.tools.jobs import Job, Scheduler, job, run_job


def test_every_process_computes_the_same_due_times() -> None:
    every = Job("e", run_job, every=60)  # type: ignore[arg-type]
    cron = Job("c", run_job, cron="17 * * * *")  # type: ignore[arg-type]
    at = datetime(2026, 12, 5, 13, 17, 0, 300_000, tzinfo=UTC)
    assert every.due(at) == at.replace(microsecond=0) and every.after(every.due(at)) == at.replace(
        minute=18, microsecond=0)
    assert cron.due(at) == cron.due(at + timedelta(minutes=40)) == at.replace(microsecond=0)
    assert cron.after(cron.due(at)) == at.replace(hour=14, microsecond=0)


async def test_a_job_due_in_two_processes_runs_once(fable: Fable, settings: Settings) -> None:
    table: dict[str, Job] = {}
    runs: list[str] = []

    @job(every=60, jobs=table)
    async def counted(f: Fable) -> None:
        runs.append(f.settings.fable_secret_key or "")
        await asyncio.sleep(0.1)

    other = await Fable.open(settings.model_copy(update={"fable_secret_key": "the-other-replica"}))
    try:
        due = table["counted"].due(datetime.now(UTC))
        schedulers = [Scheduler(fable, table), Scheduler(other, table)]
        for scheduler in schedulers:  # both ticks fire for the same due time
            scheduler.wake("counted", due=due)
        await asyncio.gather(*(s.idle() for s in schedulers))
        assert len(runs) == 1
        # a tick a moment later (clocks differ) finds that due time done; the next one runs
        assert await run_job(other, "counted", table, due=due) is False
        assert await run_job(other, "counted", table, due=table["counted"].after(due)) is True
        assert runs[1:] == ["the-other-replica"] and len(runs) == 2
    finally:
        await other.close()


_HOLDER = textwrap.dedent("""
    import asyncio, sys
    from datetime import datetime
    from fable_core.config import load_settings
    from fable_core.tools.jobs import job, run_job
    from fable_core.runtime import Fable

    table = {}

    @job(every=86_400, jobs=table)
    async def held(fable):
        print("running", flush=True)
        await asyncio.Event().wait()  # killed here

    async def main():
        fable = await Fable.open(load_settings({}, database_url=sys.argv[1], fable_data_dir=sys.argv[2],
                                               llm_provider="none", fable_secret_key="holder"))
        await run_job(fable, "held", table, due=datetime.fromisoformat(sys.argv[3]))

    asyncio.run(main())
""")


async def test_a_holder_killed_mid_job_leaves_it_to_another(fable: Fable, settings: Settings) -> None:
    table: dict[str, Job] = {}
    runs: list[int] = []

    @job(every=86_400, jobs=table)  # daily: its wait cannot reach the next due time mid-test
    async def held(_: Fable) -> None:  # a name of its own: no other test's run of it can be recorded
        runs.append(1)

    due = table["held"].due(datetime.now(UTC))
    holder = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _HOLDER, settings.database_url or "", str(settings.fable_data_dir), due.isoformat(),
        stdout=asyncio.subprocess.PIPE)
    try:
        assert holder.stdout is not None
        async with asyncio.timeout(scaled(30)):
            assert (await holder.stdout.readline()).decode().strip() == "running"
        waiting = asyncio.create_task(run_job(fable, "held", table, due=due, poll=0.05))
        await asyncio.sleep(0.3)
        assert not waiting.done() and runs == []  # the holder has it
        holder.kill()
        await holder.wait()
        async with asyncio.timeout(scaled(5)):
            assert await waiting is True
        assert runs == [1]
    finally:
        if holder.returncode is None:
            holder.kill()
            await holder.wait()
