"""Core benchmark: 100,000 notes through the dispatcher, then latency of the main tools.

    python -m bench.core [--notes 100000] [--workers 8] [--processes 2] [--no-write]

Starts a fresh embedded PostgreSQL in a temporary directory (or uses ``--database-url``), loads
synthetic notes (markdown, tags, wikilinks) with concurrent callers, then measures create_note,
read_note, list_notes and search_notes at that size, and the dispatcher's overhead over the bare
SQL of read_note. Results go to the "core" section of docs/benchmarks.md.

The sections run in order in :func:`run` (load, then :func:`latencies` at the loaded size,
then creates one at a time for scale); a new section is one more function called there, its
rows rendered by :func:`render`.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import text

from bench.harness.bench import Bench, Measured
from bench.harness.corpus import Corpus, NoteSpec, describe_bodies
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.report import Figure
from bench.harness.session import session
from bench.harness.stats import Latency, measure
from fable_core.config import Settings, load_settings
from fable_core.errors import Conflict, NeedsConfirmation
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

__all__ = ["BENCH", "CoreResults", "Options", "run"]


@dataclass(frozen=True)
class Options:
    notes: int = 100_000
    workers: int = option(8, "concurrent callers per process")
    processes: int = option(2, "loader processes")
    runs: int = option(500, "timed calls per measured tool")
    database_url: str | None = option(None, "use this database instead of a fresh embedded one")
    data_dir: Path | None = option(None, "keep the embedded server here (default: a temp dir)")
    time_limit: float | None = option(None, "stop loading after this many seconds")
    batch: int = option(250, "notes per import_notes call when loading (1: one create_note per note)")
    single_seconds: float = option(15.0, "seconds of one create_note per call after the load, for scale (0: skip)")


_BARE_READ = text(
    "SELECT id, user_id, title, body, tags, status, priority, due_date, project_id, milestone_id,"
    " parent_id, version, created_at, updated_at, completed_at FROM notes"
    " WHERE id = :id AND user_id = :user_id"
)


@dataclass
class CoreResults:
    notes: int
    load_seconds: float
    workers: int
    processes: int
    requested: int = 0
    batch: int = 1
    load_average: float = 0.0  # of the machine (1 min) when loading ended: others' work shows here
    latencies: list[Latency] = field(default_factory=list)
    single_notes: int = 0  # created one create_note call each, after the load, for comparison
    single_seconds: float = 0.0

    @property
    def load_rate(self) -> float:
        return self.notes / self.load_seconds

    def p50(self, name: str) -> float:
        return next(lat.p50_ms for lat in self.latencies if lat.name == name)


async def _make_user(fable: Fable) -> Caller:
    from fable_core.identity.accounts import create_user

    async with fable.db.transaction() as session:
        user = await create_user(session, f"bench{random.randrange(10**9)}", None)
    return Caller(user_id=user.id, username=user.username, surface="internal")


async def create(fable: Fable, caller: Caller, corpus: Corpus, spec: NoteSpec | None = None) -> None:
    """create_note through the dispatcher; a synthetic title that Fable refuses as a
    near-duplicate of an earlier one is replaced by a fresh one."""
    for _ in range(5):
        try:
            await fable.call("create_note", (spec or corpus.note()).arguments(), caller)
        except (Conflict, NeedsConfirmation):  # the same title, or one so alike that Fable asks
            spec = None
        else:
            return
    raise RuntimeError("five near-duplicate titles in a row: the corpus is too small")


async def load(fable: Fable, caller: Caller, corpus: Corpus, count: int, workers: int,
               deadline: float | None = None, batch: int = 1) -> float:
    """Create ``count`` notes with ``workers`` concurrent callers (stopping at the monotonic
    ``deadline``, if any): one create_note per note with ``batch`` 1, else import_notes calls of
    ``batch`` notes (its skipped near-duplicates replaced by fresh notes). Returns the seconds taken."""
    done = claimed = 0  # claimed: created or in flight, so concurrent workers never overshoot
    started = time.perf_counter()
    reported = 0

    async def worker() -> None:
        nonlocal done, claimed, reported
        while claimed < count and (deadline is None or time.monotonic() < deadline):
            size = min(batch, count - claimed)
            claimed += size
            if batch == 1:
                await create(fable, caller, corpus)
                done += 1
            else:
                notes = [spec.arguments() for spec in corpus.notes(size)]
                result = await fable.call("import_notes", {"notes": notes}, caller)
                done += result["created"]
                claimed -= size - result["created"]  # skipped near-duplicates: load others instead
            if done - reported >= 5000:
                reported = done
                rate = done / (time.perf_counter() - started)
                print(f"pid {os.getpid()}: {done} notes, {rate:.0f}/s", file=sys.stderr, flush=True)

    await asyncio.gather(*(worker() for _ in range(workers)))
    return time.perf_counter() - started


def _load_in_subprocesses(url: str, user_id: int, count: int, processes: int, workers: int,
                          time_limit: float | None, batch: int) -> float:
    """Each process loads its share with its own corpus seed (titles stay distinct)."""
    import subprocess

    share = count // processes
    started = time.perf_counter()
    procs = [
        subprocess.Popen([sys.executable, "-c", _LOADER, url, str(user_id), str(share + (i < count % processes)),
                          str(workers), str(1000 + i), str(batch), str(time_limit or 0)])
        for i in range(processes)
    ]
    if any(p.wait() != 0 for p in procs):
        raise SystemExit("a loader process failed")
    return time.perf_counter() - started


_LOADER = "import sys; from bench.core import load_share; load_share(sys.argv[1:])"  # one loader process


def load_share(argv: list[str]) -> None:
    """In a loader process: ``URL USER_ID NOTES WORKERS SEED BATCH TIME_LIMIT`` (0: none), loaded
    through a Fable of its own on the bench's database (already migrated)."""
    url, user_id, notes, workers, seed, batch, time_limit = argv
    asyncio.run(_load_share(url, int(user_id), int(notes), int(workers), int(seed), int(batch), float(time_limit)))


async def _load_share(url: str, user_id: int, notes: int, workers: int, seed: int, batch: int,
                      time_limit: float) -> None:
    fable = await Fable.open(load_settings({}, database_url=url, llm_provider="none"), migrate=False)
    try:
        deadline = time.monotonic() + time_limit if time_limit else None
        await load(fable, Caller(user_id=user_id, surface="internal"), Corpus(seed=seed), notes, workers, deadline,
                   batch)
    finally:
        await fable.close()


async def latencies(fable: Fable, caller: Caller, corpus: Corpus, runs: int) -> list[Latency]:
    async with fable.db.engine.connect() as conn:
        ids = [r[0] for r in await conn.execute(
            text("SELECT id FROM notes WHERE user_id = :u"), {"u": caller.user_id})]
    rng = random.Random(7)
    picks = [rng.choice(ids) for _ in range(runs + 50)]
    queries = [corpus.query() for _ in range(runs + 50)]
    filters: list[dict[str, Any]] = [
        {}, {"tag": "project"}, {"tag": "topic/python", "sort": "title"},
        {"kind": "task", "status": ["todo"], "sort": "due"}, {"kind": "note", "sort": "created"},
    ]
    call = fable.call
    results = [
        await measure("create_note", runs, lambda i: create(fable, caller, corpus)),
        await measure("read_note", runs, lambda i: call("read_note", {"note_id": picks[i]}, caller)),
        await measure("list_notes", runs, lambda i: call("list_notes", filters[i % len(filters)], caller)),
        await measure("search_notes", runs, lambda i: call("search_notes", {"query": queries[i]}, caller)),
    ]
    results += await overhead(fable, caller, picks, runs)
    return results


async def overhead(fable: Fable, caller: Caller, picks: list[int], runs: int) -> list[Latency]:
    """read_note three ways: bare SQL, the tool function in a transaction, the dispatcher."""
    from fable_core.knowledge.notes import read_note
    from fable_core.tools import Context

    autocommit = fable.db.engine.execution_options(isolation_level="AUTOCOMMIT")  # as reads run

    async def bare(i: int) -> None:
        async with autocommit.connect() as conn:
            (await conn.execute(_BARE_READ, {"id": picks[i], "user_id": caller.user_id})).one()

    async def direct(i: int) -> None:
        async with fable.db.reading() as session:  # as the dispatcher runs read tools
            ctx = Context.within(session, caller, fable.settings, fable)
            (await read_note(ctx, note_id=picks[i])).model_dump(mode="json")

    async def dispatched(i: int) -> None:
        await fable.call("read_note", {"note_id": picks[i]}, caller)

    return [
        await measure("read_note: bare SQL", runs, bare),
        await measure("read_note: tool, no dispatcher", runs, direct),
        await measure("read_note: dispatcher", runs, dispatched),
    ]


async def run(settings: Settings, *, notes: int, workers: int, processes: int, runs: int,
              time_limit: float | None = None, batch: int = 250, single_seconds: float = 15) -> CoreResults:
    fable = await Fable.open(settings)
    try:
        caller = await _make_user(fable)
        corpus = Corpus(seed=42)
        if processes > 1:
            seconds = await asyncio.to_thread(
                _load_in_subprocesses, fable.db.url, caller.user_id, notes, processes, workers,
                time_limit, batch)
            for _ in range(2000):  # give this corpus titles to link to and to search for
                corpus.note()
        else:
            deadline = time.monotonic() + time_limit if time_limit else None
            seconds = await load(fable, caller, corpus, notes, workers, deadline, batch)
        async with fable.db.engine.begin() as conn:
            await conn.execute(text("ANALYZE"))
            loaded = (await conn.execute(
                text("SELECT count(*) FROM notes WHERE user_id = :u"), {"u": caller.user_id})).scalar_one()
        result = CoreResults(loaded, seconds, workers, processes, requested=notes, batch=batch,
                             load_average=os.getloadavg()[0])
        result.latencies = await latencies(fable, caller, corpus, runs)
        if batch > 1 and single_seconds > 0:  # the same corpus one create_note at a time, for scale
            async with fable.db.engine.connect() as conn:
                before = (await conn.execute(text("SELECT count(*) FROM notes"))).scalar_one()
            result.single_seconds = await load(fable, caller, corpus, 10**9, workers,
                                               time.monotonic() + single_seconds)
            async with fable.db.engine.connect() as conn:
                result.single_notes = (await conn.execute(text("SELECT count(*) FROM notes"))).scalar_one() - before
        return result
    finally:
        await fable.close()


def figures(r: CoreResults) -> list[Figure]:
    """The headline figures, the load rate first (``bench.run --repeat`` picks its median run by it)."""
    return [
        Figure("load rate", r.load_rate, "notes/s", "rate"),
        *[Figure(f"{lat.name} p50", lat.p50_ms, "ms", "time") for lat in r.latencies],
        *([Figure("one create_note per call", r.single_notes / r.single_seconds, "notes/s", "rate")]
          if r.single_seconds else []),
    ]


def render(r: CoreResults, machine: Machine, memory: PeakMemory) -> str:
    overhead = r.p50("read_note: dispatcher") - r.p50("read_note: bare SQL")
    dispatcher_only = r.p50("read_note: dispatcher") - r.p50("read_note: tool, no dispatcher")
    rate_at = machine.normalise(r.load_rate, "rate")
    search_at = machine.normalise(r.p50("search_notes"), "time")
    overhead_at = machine.normalise(overhead, "time")
    checks = [
        ("load rate", f"{machine.rate(r.load_rate)} notes/s", ">= 1,000 notes/s", rate_at >= 1000),
        ("search_notes p50", f"{machine.ms(r.p50('search_notes'))} ms", "< 20 ms", search_at < 20),
        ("dispatcher overhead over bare SQL (read_note p50)", f"{machine.ms(overhead)} ms", "< 1 ms",
         overhead_at < 1),
    ]
    lines = [
        "## Core / dispatcher",
        "",
        (f"`python -m bench.core`: {r.notes:,} synthetic notes ({describe_bodies()}: headings, lists and "
         "code, 0-3 hierarchical tags, 0-3 wikilinks, every 5th a task) created through the "
         f"dispatcher by {r.processes} process(es) x {r.workers} concurrent callers into a fresh "
         "embedded PostgreSQL, "
         + (f"with `import_notes` calls of {r.batch} notes each (duplicate checks, versions and "
            "links per batch; near-duplicate titles the corpus produces are skipped and replaced)"
            if r.batch > 1 else "one `create_note` call per note")
         + f"; then each tool called one at a time. 1-minute load average when loading ended: "
         f"{r.load_average:.1f}."),
        "",
        machine.describe(),
        "",
        f"Load: {r.notes:,} notes in {r.load_seconds:.1f} s = **{machine.rate(r.load_rate)} notes/s**"
        + (f" (stopped by --time-limit before the {r.requested:,} requested)."
           if r.notes < r.requested else "."),
        *([
            "",
            (f"For scale, one `create_note` call per note ({r.workers} concurrent callers, one "
             f"process, at {r.notes:,} notes): {r.single_notes:,} notes in {r.single_seconds:.1f} s = "
             f"{machine.rate(r.single_notes / r.single_seconds)} notes/s."),
        ] if r.single_seconds else []),
        "",
        "| Call (at the loaded size) | Samples | p50 ms | p99 ms | mean ms |",
        "|---|---|---|---|---|",
        *[lat.row(machine.ms) for lat in r.latencies],
        "",
        (f"Dispatcher overhead: read_note through the dispatcher minus the bare SQL = {machine.ms(overhead)} ms "
         "p50; of which the dispatcher itself (validation, result validation, queuing the usage row) = "
         f"{machine.ms(dispatcher_only)} ms, the rest is the tool (its statement, the access check, the "
         "response model). Every path runs without BEGIN/COMMIT, as read tools do."),
        "",
        memory.describe() + " Python: this process and the loader processes; PostgreSQL: the "
        "postmaster and its backends.",
        "",
        "| Target (judged at the reference speed) | Measured | Goal | Met |",
        "|---|---|---|---|",
        *[f"| {name} | {got} | {goal} | {'yes' if ok else '**no**'} |" for name, got, goal, ok in checks],
    ]
    return "\n".join(lines)


def _measure(o: Options) -> Measured[CoreResults]:
    with tempfile.TemporaryDirectory(prefix="fable-bench-") as tmp, \
            session(o.data_dir or Path(tmp), o.database_url) as bench:
        settings = load_settings({}, database_url=bench.database_url, fable_data_dir=o.data_dir or Path(tmp),
                                 llm_provider="none", fable_db_pool_size=max(10, o.workers + 2))
        result = asyncio.run(run(settings, notes=o.notes, workers=o.workers, processes=o.processes, runs=o.runs,
                                 time_limit=o.time_limit, batch=o.batch, single_seconds=o.single_seconds))
    return bench.measured(result)


BENCH = Bench("core", __doc__, Options, _measure, render, figures,
              quick=Options(notes=2000, runs=50, processes=1, batch=100, single_seconds=2))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
