"""Journal benchmark: the morning prep's gather, without the model, for a user with 100k notes.

    python -m bench.journal [--notes 100000] [--runs 200] [--no-write]

One fresh embedded PostgreSQL in a temporary directory. The user's first 1,000 notes are
loaded by ``import_notes`` (``bench.harness.corpus``: Markdown bodies, a third of them tasks with due
dates); the rest are SQL copies of them (titles numbered), up to ``--notes``. Then their world
is given a day to prepare: 20 projects holding four notes in five, tasks due today and overdue
(one task in twenty, due within the last 30 days), and seven earlier journal days of 20
messages each (promises and questions among them, for the open threads).

Timed, one at a time after a warm-up: the gather as the prep runs it (the journal settings and
zone, then every registered section, in one read-only session), each section alone, and
``prepare_journal`` through the dispatcher with no model configured (gather, the structured
opener, storing it: what a user without a model waits for). Target: the gather p50 < 100 ms at
100k notes. Results go to the "journal" section of docs/benchmarks.md.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import text

from bench.core import _make_user
from bench.harness.bench import Bench
from bench.harness.corpus import Corpus
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.report import Figure
from bench.harness.session import on_one_fable
from bench.imports import import_corpus
from fable_core.daily.journal.days import journal_clock, open_day, prep_day
from fable_core.daily.journal.prep import gather
from fable_core.daily.journal.sections import sections
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    notes: int = 100_000
    runs: int = option(200, "calls of each kind")


IMPORTED = 1000
PROJECTS = 20
EARLIER_DAYS = 7
MESSAGES_PER_DAY = 20
_SAID = ["I'll call the bank about the card.", "Should I move the team meeting?", "Long day, but a good one.",
         "Remind me to water the tomatoes.", "The draft is nearly done.", "What did I promise Sam?"]


@dataclass
class Result:
    notes: int
    tasks_due: int
    load_seconds: float
    calls: dict[str, list[float]] = field(default_factory=dict)  # call -> seconds

    def p(self, name: str, q: float) -> float:
        ms = sorted(s * 1000 for s in self.calls[name])
        return ms[min(len(ms) - 1, round(q * (len(ms) - 1)))]


async def _sql(fable: Fable, sql: str, **params: Any) -> Any:
    async with fable.db.engine.begin() as conn:
        return await conn.execute(text(sql), params)


async def _world(fable: Fable, notes: int) -> Caller:
    me = await _make_user(fable)
    await import_corpus(fable, me, Corpus(seed=11), min(IMPORTED, notes))
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
          AND p.title = 'Project ' || (notes.id % :n + 1)""",
               me=me.user_id, n=PROJECTS)
    today = datetime.now(UTC).date()
    await _sql(fable, """
        UPDATE notes SET due_date = CAST(:today AS date) - (notes.id % 30), status = 'todo'
        WHERE user_id = :me AND id % 20 = 0""", me=me.user_id, today=today)
    async with fable.db.transaction() as s:
        for back in range(1, EARLIER_DAYS + 1):
            row = await open_day(s, me, today - timedelta(days=back))
            for i in range(MESSAGES_PER_DAY):
                await s.execute(text("INSERT INTO messages (conversation_id, user_id, role, content) "
                                     "VALUES (:c, :u, :r, :t)"),
                                {"c": row.conversation_id, "u": me.user_id, "r": "user" if i % 2 == 0 else "assistant",
                                 "t": _SAID[(i + back) % len(_SAID)] if i % 2 == 0 else "Noted."})
    await _sql(fable, "ANALYZE")
    return me


async def _gather(fable: Fable, me: Caller) -> None:
    async with fable.db.reading() as s:
        prefs, zone = await journal_clock(s, me)
        done = await gather(s, me, prep_day(me.user_id, datetime.now(UTC).astimezone(zone).date(), zone, prefs))
    assert not done.failed, f"sections failed: {done.failed}"


def _section(fable: Fable, me: Caller, name: str) -> Callable[[], Awaitable[None]]:
    [found] = [s for s in sections() if s.name == name]

    async def one() -> None:
        async with fable.db.reading() as s:
            prefs, zone = await journal_clock(s, me)
            await found.gather(s, me, prep_day(me.user_id, datetime.now(UTC).astimezone(zone).date(), zone, prefs))

    return one


async def run(fable: Fable, notes: int, runs: int) -> Result:
    started = time.perf_counter()
    me = await _world(fable, notes)
    load = time.perf_counter() - started
    calls: dict[str, Callable[[], Awaitable[Any]]] = {
        "gather (every section)": lambda: _gather(fable, me),
        **{f"section {s.name}": _section(fable, me, s.name) for s in sections()},
        "prepare_journal, no model": lambda: fable.call("prepare_journal", {}, me),
    }
    for call in calls.values():
        for _ in range(5):
            await call()
    result = Result(
        notes=(await _sql(fable, "SELECT count(*) FROM notes")).scalar_one(),
        tasks_due=(await _sql(fable, "SELECT count(*) FROM notes WHERE status IN ('todo', 'in_progress') "
                                     "AND due_date <= CAST(:d AS date)", d=datetime.now(UTC).date())).scalar_one(),
        load_seconds=load, calls={name: [] for name in calls})
    for _ in range(runs):  # the calls take turns: the machine drifts
        for name, call in calls.items():
            begun = time.perf_counter()
            await call()
            result.calls[name].append(time.perf_counter() - begun)
    return result


def figures(r: Result) -> list[Figure]:
    return [Figure(f"gather p50 at {r.notes:,} notes", r.p("gather (every section)", .5), "ms", "time"),
            Figure(f"gather p95 at {r.notes:,} notes", r.p("gather (every section)", .95), "ms", "time")]


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    rows = [f"| {name} | {len(samples)} | {machine.ms(r.p(name, .5))} | {machine.ms(r.p(name, .95))} |"
            for name, samples in r.calls.items()]
    p50 = r.p("gather (every section)", .5)
    met = machine.normalise(p50, "time") < 100
    return "\n".join([
        "## Journal (`python -m bench.journal`)",
        "",
        (f"One user holding {r.notes:,} notes ({IMPORTED:,} loaded by `import_notes`, the rest SQL copies of them), "
         f"{PROJECTS} projects holding four notes in five, {r.tasks_due:,} open tasks due today or overdue, and "
         f"{EARLIER_DAYS} earlier journal days of {MESSAGES_PER_DAY} messages. The morning prep's gather as it runs "
         f"(the journal settings, then every registered section in one read-only session), each section alone, "
         f"and `prepare_journal` through the dispatcher with no model (gather, structured opener, stored); "
         f"one at a time (loading took {r.load_seconds:.0f} s). Cells are ms."),
        "",
        machine.describe(),
        "",
        "| Call | Samples | p50 | p95 |",
        "|---|---:|---:|---:|",
        *rows,
        "",
        memory.describe(),
        "",
        "| Target (judged at the reference speed) | Measured | Goal | Met |",
        "|---|---|---|---|",
        f"| prep gather p50 at {r.notes:,} notes, no model | {machine.ms(p50)} ms | < 100 ms | "
        f"{'yes' if met else '**no**'} |",
    ])


BENCH = Bench("journal", __doc__, Options, lambda o: on_one_fable(lambda fable: run(fable, o.notes, o.runs)), render,
              figures, quick=Options(notes=3000, runs=20))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
