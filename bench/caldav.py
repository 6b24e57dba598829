"""CalDAV sync benchmark: what a sync costs when nothing changed, against a local Radicale.

    python -m bench.caldav [--events 500] [--runs 50] [--no-write]

One fresh embedded PostgreSQL and one Radicale (``tests/support/caldav_server.py``: a real
CalDAV server, on 127.0.0.1, storage in a temporary directory). One user with ``--events``
events (one in five recurring weekly with an exception, one in four all-day, in Europe/Berlin)
connects the account and syncs them all to the server once (timed: the first push), then the
calendar is connected again from scratch and synced (timed: a full pull that matches every
event by UID and adds none). Then ``--runs`` syncs with nothing changed on either side are
timed one after another, through the dispatcher (``sync_calendar``): the claim, the
sync-collection REPORT with the stored token, the query for local changes and the status.

Target: a sync with no changes < 200 ms (p50, at the reference speed) with 500 events.
Results go to the "caldav" section of docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.harness.bench import Bench, Measured
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.report import Figure
from bench.harness.session import on_fable, session
from bench.harness.stats import Latency, measure
from fable_core.config import load_settings
from fable_core.daily.calendar.service import EventFields, create_event
from fable_core.identity.accounts import create_user
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from tests.support.caldav_server import Radicale, radicale_server

__all__ = ["BENCH", "Options", "Result", "figures", "render", "run"]


@dataclass(frozen=True)
class Options:
    events: int = 500
    runs: int = option(50, "syncs with nothing changed, timed")


TARGET_MS = 200.0


@dataclass
class Result:
    events: int
    first_push_s: float
    full_pull_s: float
    pulled_again: int
    quiet: Latency


async def _events(fable: Fable, caller: Caller, count: int) -> None:
    start = datetime(2026, 1, 5, 9, tzinfo=UTC)
    async with fable.db.transaction() as session:
        for n in range(count):
            day = start + timedelta(days=n % 365, hours=n % 8)
            if n % 4 == 0:
                fields = EventFields(title=f"Away {n}", start=day.date(), end=day.date() + timedelta(days=2))
            elif n % 5 == 1:
                fields = EventFields(title=f"Weekly {n}", start=day, end=day + timedelta(minutes=30),
                                     timezone="Europe/Berlin", rrule="FREQ=WEEKLY;COUNT=20",
                                     exdates=[day + timedelta(weeks=2)])
            else:
                fields = EventFields(title=f"Meeting {n}", start=day, end=day + timedelta(hours=1),
                                     timezone="Europe/Berlin", location="Room 2", description="Agenda " * 10)
            await create_event(session, caller, fields)


async def run(fable: Fable, radicale: Radicale, events: int = 500, runs: int = 50) -> Result:
    async with fable.db.transaction() as session:
        user = await create_user(session, "caldav-bench", None)
    caller = Caller(user_id=user.id, username=user.username)
    await _events(fable, caller, events)
    login = {"url": radicale.url, "username": "ana", "password": radicale.users["ana"]}
    await fable.call("connect_caldav", login, caller)
    started = time.perf_counter()
    pushed = await fable.call("sync_calendar", {}, caller)
    first_push = time.perf_counter() - started
    assert pushed["pushed"] == events, pushed
    await fable.call("disconnect_caldav", {}, caller)
    await fable.call("connect_caldav", login, caller)
    started = time.perf_counter()
    again = await fable.call("sync_calendar", {}, caller)
    full_pull = time.perf_counter() - started

    async def quiet(_: int) -> None:
        result = await fable.call("sync_calendar", {}, caller)
        assert result["pulled"] == result["pushed"] == result["deleted"] == 0, result

    latency = await measure("sync_calendar, nothing changed", runs, quiet, warmup=min(5, runs))
    return Result(events, first_push, full_pull, again["pulled"], latency)


def figures(r: Result) -> list[Figure]:
    return [Figure("sync with no changes p50", r.quiet.p50_ms, "ms", "time"),
            Figure("sync with no changes p99", r.quiet.p99_ms, "ms", "time")]


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    met = machine.normalise(r.quiet.p50_ms, "time") < TARGET_MS
    return "\n".join([
        "## CalDAV sync (`python -m bench.caldav`)",
        "",
        (f"One user with {r.events:,} events (one in five recurring weekly with an exception, one in four all-day, "
         "in Europe/Berlin) synced with a local Radicale (a real CalDAV server on 127.0.0.1, the one the tests "
         f"run). The first sync pushed them all in {r.first_push_s:.1f} s; connecting the account again and "
         f"syncing (a full listing, every event matched by UID) took {r.full_pull_s:.1f} s and added "
         f"{r.pulled_again} events. Then syncs with nothing changed on either side, through the dispatcher "
         "(`sync_calendar`), one after another: the claim, a sync-collection REPORT with the stored token, the "
         "query for local changes, the status. Figures in ms."),
        "",
        machine.describe(),
        "",
        "| Call | Samples | p50 | p99 | mean |",
        "|---|---:|---:|---:|---:|",
        r.quiet.row(machine.ms),
        "",
        memory.describe(),
        "",
        "| Target (judged at the reference speed) | Measured | Goal | Met |",
        "|---|---|---|---|",
        f"| a sync with no changes, {r.events:,} events, p50 | {machine.ms(r.quiet.p50_ms)} ms | "
        f"< {TARGET_MS:.0f} ms | {'yes' if met else '**no**'} |",
    ])


def _measure(o: Options) -> Measured[Result]:
    with tempfile.TemporaryDirectory(prefix="fable-bench-") as tmp, session(Path(tmp)) as bench, \
            radicale_server(Path(tmp) / "radicale") as radicale:
        settings = load_settings({}, database_url=bench.database_url, fable_data_dir=Path(tmp), llm_provider="none",
                                 fable_caldav_allow_hosts=[radicale.host])
        result = asyncio.run(on_fable(settings, lambda fable: run(fable, radicale, o.events, o.runs)))
    return bench.measured(result)


BENCH = Bench("caldav", __doc__, Options, _measure, render, figures, quick=Options(events=50, runs=5))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
