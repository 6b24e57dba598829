"""Export benchmark: ``export_data`` of a user with 100k notes, as a Markdown ZIP and as JSON.

    python -m bench.export [--notes 100000] [--no-write]

One fresh embedded PostgreSQL in a temporary directory. The user's first 1,000 notes are
loaded by ``import_notes`` (``bench.harness.corpus``: ~900-character Markdown bodies, tags, wikilinks,
a third of them tasks); the rest are SQL copies of them (titles numbered), up to ``--notes``,
four in five in one of 20 projects. Each format is exported once through the dispatcher, the
stream read to its end and thrown away (as a socket would send it), after a warm-up export of
the same user. Timed: the whole export; measured: the growth of this process's RSS over its
value before the export, sampled after every chunk (the archive must never sit in memory).
Targets: >= 5,000 notes/s, RSS growth < 200 MB. Results go to the "export" section of
docs/benchmarks.md.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import psutil
from sqlalchemy import text

from bench.core import _make_user
from bench.harness.bench import Bench
from bench.harness.corpus import Corpus
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.report import Figure
from bench.harness.session import on_one_fable
from bench.imports import import_corpus
from fable_core.runtime import Fable
from fable_core.tools.binary import Download
from fable_core.tools.caller import Caller

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    notes: int = 100_000


IMPORTED = 1000
PROJECTS = 20
FORMATS = ("markdown", "json")


@dataclass
class Run:
    seconds: float
    megabytes: float
    rss_growth_mb: float


@dataclass
class Result:
    notes: int
    load_seconds: float
    runs: dict[str, Run] = field(default_factory=dict)


async def _sql(fable: Fable, sql: str, **params: Any) -> Any:
    async with fable.db.engine.begin() as conn:
        return await conn.execute(text(sql), params)


async def _world(fable: Fable, notes: int) -> Caller:
    me = await _make_user(fable)
    await import_corpus(fable, me, Corpus(seed=16), min(IMPORTED, notes))
    if notes > IMPORTED:
        await _sql(fable, """
            INSERT INTO notes (user_id, title, title_key, body, tags, status, priority, due_date, version)
            SELECT n.user_id, left(n.title || ' ' || g, 300), left(n.title_key || ' ' || g, 300), n.body, n.tags,
                   n.status, n.priority, n.due_date, 1
            FROM notes n, generate_series(1, :copies) g WHERE n.user_id = :me ORDER BY g, n.id LIMIT :more""",
                   me=me.user_id, copies=notes // IMPORTED + 1, more=notes - IMPORTED)
    await _sql(fable, "INSERT INTO projects (user_id, title) SELECT :me, 'Project ' || g FROM generate_series(1, :n) g",
               me=me.user_id, n=PROJECTS)
    await _sql(fable, """
        UPDATE notes SET project_id = p.id FROM projects p
        WHERE notes.user_id = :me AND notes.id % 5 <> 0 AND p.user_id = :me
          AND p.title = 'Project ' || (notes.id % :n + 1)""", me=me.user_id, n=PROJECTS)
    await _sql(fable, "ANALYZE")
    return me


async def _export(fable: Fable, me: Caller, fmt: str) -> Run:
    process = psutil.Process()
    before = peak = process.memory_info().rss
    begun = time.perf_counter()
    result = await fable.dispatcher.run("export_data", {"format": fmt}, me)
    assert isinstance(result, Download)
    size = 0
    async for chunk in result.stream():
        size += len(chunk)
        peak = max(peak, process.memory_info().rss)
    return Run(time.perf_counter() - begun, size / 2**20, (peak - before) / 2**20)


async def run(fable: Fable, notes: int) -> Result:
    started = time.perf_counter()
    me = await _world(fable, notes)
    result = Result(notes=(await _sql(fable, "SELECT count(*) FROM notes")).scalar_one(),
                    load_seconds=time.perf_counter() - started)
    for fmt in FORMATS:
        await _export(fable, me, fmt)  # warm-up: statements prepared, pages cached
        result.runs[fmt] = await _export(fable, me, fmt)
    return result


def _rate(r: Result, fmt: str) -> float:
    return r.notes / r.runs[fmt].seconds


def figures(r: Result) -> list[Figure]:
    return [Figure(f"{fmt} export at {r.notes:,} notes", _rate(r, fmt), "notes/s", "rate") for fmt in FORMATS]


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    rows = [f"| {fmt} | {run.seconds:.1f} | {_rate(r, fmt):,.0f} ({machine.normalise(_rate(r, fmt), 'rate'):,.0f}) | "
            f"{run.megabytes:,.1f} | {run.rss_growth_mb:,.1f} |" for fmt, run in r.runs.items()]
    targets = []
    for fmt, run in r.runs.items():
        rate = machine.normalise(_rate(r, fmt), "rate")
        targets += [f"| {fmt}: notes/s | {rate:,.0f} | >= 5,000 | {'yes' if rate >= 5000 else '**no**'} |",
                    f"| {fmt}: RSS growth | {run.rss_growth_mb:,.1f} MB | < 200 MB | "
                    f"{'yes' if run.rss_growth_mb < 200 else '**no**'} |"]
    return "\n".join([
        "## Export (`python -m bench.export`)",
        "",
        (f"One user holding {r.notes:,} notes ({IMPORTED:,} loaded by `import_notes`, the rest SQL copies of them), "
         f"four in five in one of {PROJECTS} projects. `export_data` through the dispatcher, the stream read to "
         f"its end and dropped, once per format after a warm-up export; RSS growth is this process's peak RSS "
         f"during the export less its RSS before it (loading took {r.load_seconds:.0f} s); the JSON export runs "
         f"after the Markdown one in the same process and grows into memory the ZIP's directory freed, so its "
         f"figure says only that it needs no more than that. Rates in parentheses are at the reference speed."),
        "",
        machine.describe(),
        "",
        "| Format | Seconds | Notes/s | Output MB | RSS growth MB |",
        "|---|---:|---:|---:|---:|",
        *rows,
        "",
        memory.describe(),
        "",
        "| Target (judged at the reference speed) | Measured | Goal | Met |",
        "|---|---|---|---|",
        *targets,
    ])


BENCH = Bench("export", __doc__, Options, lambda o: on_one_fable(lambda fable: run(fable, o.notes)), render, figures,
              quick=Options(notes=3000))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
