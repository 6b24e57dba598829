"""Read-replica benchmark: what routing reads to a streaming replica costs per call.

    python -m bench.readrep [--notes 20000] [--runs 200] [--no-write]

One fresh embedded PostgreSQL holding one user's notes (1,000 loaded by ``import_notes``, the
rest SQL copies of them, up to ``--notes``), and a streaming replica of it made with the
embedded server's ``pg_basebackup`` (``bench.harness.standby``), on this same machine. Two Fables on
them: one without ``DATABASE_READ_URL``, one with it. Timed, the kinds taking turns, as an MCP
caller: ``read_note``, ``list_notes`` and ``search_notes`` on the primary alone, routed to the
replica, and routed for a caller another process saw write within the window (the primary
answers after both look-ups); and ``update_note`` without and with the replica (its stamp).

Both servers share this machine's two cores, so this measures the routing's cost, not the
capacity a replica on its own machine adds. Results go to the "readrep" section of
docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sqlalchemy import text

from bench.core import _make_user
from bench.harness.bench import Bench, Measured
from bench.harness.corpus import Corpus
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.report import Figure
from bench.harness.session import on_fable, session
from bench.harness.standby import streaming_replica
from bench.imports import import_corpus
from fable_core.config import load_settings
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    notes: int = 20_000
    runs: int = option(200, "calls of each kind")


IMPORTED = 1000


@dataclass
class Result:
    notes: int
    calls: dict[str, list[float]] = field(default_factory=dict)  # kind -> seconds
    routed: dict[str, int] = field(default_factory=dict)

    def p(self, name: str, q: float) -> float:
        ms = sorted(s * 1000 for s in self.calls[name])
        return ms[min(len(ms) - 1, round(q * (len(ms) - 1)))]


async def _world(fable: Fable, notes: int) -> tuple[Caller, list[int]]:
    me = await _make_user(fable)
    await import_corpus(fable, me, Corpus(seed=7), min(IMPORTED, notes))
    async with fable.db.engine.begin() as conn:
        if notes > IMPORTED:
            await conn.execute(text("""
                INSERT INTO notes (user_id, title, title_key, body, tags, status, priority, due_date, version)
                SELECT n.user_id, left(n.title || ' ' || g, 300), left(n.title_key || ' ' || g, 300), n.body, n.tags,
                       n.status, n.priority, n.due_date, 1
                FROM notes n, generate_series(1, :copies) g WHERE n.user_id = :me ORDER BY g, n.id LIMIT :more"""),
                               {"me": me.user_id, "copies": notes // IMPORTED + 1, "more": notes - IMPORTED})
        ids = list((await conn.execute(text("SELECT id FROM notes WHERE user_id = :me ORDER BY id LIMIT 500"),
                                       {"me": me.user_id})).scalars())
    async with fable.db.engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(text("ANALYZE"))
    return replace(me, surface="mcp"), ids


async def _stamp(fable: Fable, me: Caller, fresh: bool) -> None:
    """``fresh``: as if another Fable process had just served a write of ``me``'s (a stamp that
    stays fresh); else no write in the window. Either way this process remembers none."""
    assert fable.db.replica is not None
    fable.db.replica._wrote.clear()
    async with fable.db.engine.begin() as conn:
        if fresh:
            await conn.execute(text("INSERT INTO recent_writes VALUES (:u, now() + interval '1 day') ON CONFLICT "
                                    "(writer_id) DO UPDATE SET written_at = excluded.written_at"), {"u": me.user_id})
        else:
            await conn.execute(text("DELETE FROM recent_writes"))


async def run(plain: Fable, routed: Fable, me: Caller, ids: list[int], runs: int, warmup: int = 5) -> Result:
    assert routed.db.replica is not None

    def reads(fable: Fable) -> dict[str, Callable[[], Awaitable[Any]]]:
        return {
            "read_note": lambda: fable.call("read_note", {"note_id": random.choice(ids)}, me),
            "list_notes": lambda: fable.call("list_notes", {"limit": 20}, me),
            "search_notes": lambda: fable.call("search_notes", {"query": random.choice(("garden", "budget", "meeting",
                                                                                        "recipe"))}, me),
        }

    kinds: dict[str, Callable[[], Awaitable[Any]]] = {}  # name -> the call timed
    for name, call in reads(plain).items():
        kinds[f"{name}, primary only"] = call
    for name, call in reads(routed).items():
        kinds[f"{name}, routed to the replica"] = call
    for name, call in reads(routed).items():
        kinds[f"{name}, routed, caller wrote elsewhere"] = call
    counter = iter(range(10**9))
    kinds["update_note, no replica"] = lambda: plain.call(
        "update_note", {"note_id": ids[0], "tags": [f"t{next(counter)}"]}, me)
    kinds["update_note, with the replica (stamp)"] = lambda: routed.call(
        "update_note", {"note_id": ids[1], "tags": [f"t{next(counter)}"]}, me)

    for name, kind in kinds.items():  # warm-up
        for _ in range(warmup):
            await _stamp(routed, me, fresh="wrote elsewhere" in name)
            await kind()
    replica = routed.db.replica
    async with plain.db.engine.connect() as conn:
        notes = (await conn.execute(text("SELECT count(*) FROM notes"))).scalar_one()
    result = Result(notes=notes, calls={name: [] for name in kinds})
    before = dict(replica.routed)
    for _ in range(runs):  # the kinds take turns: the machine drifts
        for name, kind in kinds.items():
            await _stamp(routed, me, fresh="wrote elsewhere" in name)  # not timed
            begun = time.perf_counter()
            await kind()
            result.calls[name].append(time.perf_counter() - begun)
    result.routed = {k: v - before[k] for k, v in replica.routed.items()}
    return result


def figures(r: Result) -> list[Figure]:
    overhead = r.p("read_note, routed to the replica", .5) - r.p("read_note, primary only", .5)
    return [Figure("read_note p50 routed to the replica", r.p("read_note, routed to the replica", .5), "ms", "time"),
            Figure("routing overhead on read_note p50", overhead, "ms", "time")]


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    rows = [f"| {name} | {len(samples)} | {machine.ms(r.p(name, .5))} | {machine.ms(r.p(name, .95))} |"
            for name, samples in r.calls.items()]
    return "\n".join([
        "## Read replicas (`python -m bench.readrep`)",
        "",
        (f"One user's {r.notes:,} notes on the embedded PostgreSQL and a streaming replica of it "
         f"(`pg_basebackup -R -X stream`) on the same machine; two Fables, one with `DATABASE_READ_URL`. "
         f"Each call through the dispatcher as an MCP caller, one at a time, the kinds taking turns. "
         f"\"Routed\" calls ask the primary (the caller's stamp, its WAL position) and the replica (its replay) "
         f"at once, then run on the replica; \"caller wrote elsewhere\": another process stamped the caller, so "
         f"the primary answers after both look-ups. Both servers share two cores: this is the routing's cost, "
         f"not the capacity a replica on a machine of its own adds (and the memory line counts the primary's "
         f"server only). Cells are ms."),
        "",
        machine.describe(),
        "",
        "| Call | Samples | p50 | p95 |",
        "|---|---:|---:|---:|",
        *rows,
        "",
        f"Candidate reads of the routed Fable during the timed runs: {r.routed.get('replica', 0)} on the replica, "
        f"{r.routed.get('primary', 0)} on the primary.",
        "",
        memory.describe(),
    ])


def _measure(o: Options) -> Measured[Result]:
    random.seed(1)
    with tempfile.TemporaryDirectory(prefix="fable-bench-") as tmp, session(Path(tmp)) as bench:
        settings = load_settings({}, database_url=bench.database_url, fable_data_dir=Path(tmp), llm_provider="none")

        async def routed(plain: Fable) -> Result:
            me, ids = await _world(plain, o.notes)
            async with streaming_replica(bench.database_url) as standby:
                replica = settings.model_copy(update={"database_read_url": standby.url})
                return await on_fable(replica, lambda fable: run(plain, fable, me, ids, o.runs))

        result = asyncio.run(on_fable(settings, routed))
    return bench.measured(result)


BENCH = Bench("readrep", __doc__, Options, _measure, render, figures, quick=Options(notes=2000, runs=20))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
