"""Tasks benchmark: what the Tasks page asks for, quick add, the title rule and the trash, at 10k notes.

    python -m bench.tasks [--notes 10000] [--runs 100] [--no-write]

One fresh embedded PostgreSQL in a temporary directory. The user's first 1,000 notes are loaded
by ``import_notes`` (``bench.harness.corpus``: a third of them tasks with due dates); the rest are SQL
copies of them (titles numbered), up to ``--notes``, in 20 projects; one task in five is open
with a due date within 30 days either side of today.

Timed through the dispatcher, one at a time after a warm-up: the Tasks page's three calls
(``list_tasks`` 25 a group, ``list_projects``, ``list_tags``) together and ``list_tasks`` alone
sorted by due date and by priority, filtered by a tag; ``parse_task``; ``create_note`` of a task
(the title rule's candidate scans included) then ``delete_note`` of it (into the trash) and
``restore_note``; ``list_trash``. Target: the Tasks page's calls p50 < 500 ms at 10k notes.
Results go to the "tasks" section of docs/benchmarks.md.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import count
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
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    notes: int = 10_000
    runs: int = option(100, "calls of each kind")


IMPORTED = 1000
PROJECTS = 20
PAGE = "Tasks page (3 calls)"


@dataclass
class Result:
    notes: int
    open_tasks: int
    load_seconds: float
    calls: dict[str, list[float]] = field(default_factory=dict)

    def p(self, name: str, q: float) -> float:
        ms = sorted(s * 1000 for s in self.calls[name])
        return ms[min(len(ms) - 1, round(q * (len(ms) - 1)))]


async def _sql(fable: Fable, sql: str, **params: Any) -> Any:
    async with fable.db.engine.begin() as conn:
        return await conn.execute(text(sql), params)


async def _world(fable: Fable, notes: int) -> Caller:
    me = await _make_user(fable)
    await import_corpus(fable, me, Corpus(seed=7), min(IMPORTED, notes))
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
        WHERE notes.user_id = :me AND p.user_id = :me AND p.title = 'Project ' || (notes.id % :n + 1)""",
               me=me.user_id, n=PROJECTS)
    await _sql(fable, """
        UPDATE notes SET status = 'todo', due_date = CAST(:today AS date) + (notes.id % 61 - 30)
        WHERE user_id = :me AND id % 5 = 0""", me=me.user_id, today=datetime.now(UTC).date())
    await _sql(fable, "ANALYZE")
    return me


async def _page(fable: Fable, me: Caller) -> None:
    await fable.call("list_tasks", {"limit": 25}, me)
    await fable.call("list_projects", {"limit": 100}, me)
    await fable.call("list_tags", {"limit": 100}, me)


def _add_delete_restore(fable: Fable, me: Caller) -> dict[str, Callable[[], Awaitable[Any]]]:
    """create_note, delete_note and restore_note of one new task per run, timed apart."""
    serial = count(1)
    made: list[int] = []

    async def create() -> None:
        made.append((await fable.call("create_note", {"title": f"Renew the lease {next(serial)}", "status": "todo",
                                                      "priority": "high"}, me))["id"])

    async def delete() -> None:
        await fable.call("delete_note", {"note_id": made[-1]}, me)

    async def restore() -> None:
        await fable.call("restore_note", {"trashed_id": made[-1]}, me)

    return {"create_note (a task)": create, "delete_note (to the trash)": delete, "restore_note": restore}


async def run(fable: Fable, notes: int, runs: int) -> Result:
    started = time.perf_counter()
    me = await _world(fable, notes)
    load = time.perf_counter() - started
    tag = (await fable.call("list_tags", {"limit": 1}, me))["items"][0]["tag"]
    calls: dict[str, Callable[[], Awaitable[Any]]] = {
        PAGE: lambda: _page(fable, me),
        "list_tasks (by due date)": lambda: fable.call("list_tasks", {"limit": 25}, me),
        "list_tasks (by priority)": lambda: fable.call("list_tasks", {"limit": 25, "sort": "priority"}, me),
        "list_tasks (a tag)": lambda: fable.call("list_tasks", {"limit": 25, "tag": tag}, me),
        "parse_task": lambda: fable.call("parse_task", {"text": "pay rent every month on the 1st p1 #home"}, me),
        **_add_delete_restore(fable, me),
        "list_trash": lambda: fable.call("list_trash", {}, me),
    }
    for _ in range(3):
        for call in calls.values():
            await call()
    result = Result(
        notes=(await _sql(fable, "SELECT count(*) FROM notes")).scalar_one(),
        open_tasks=(await _sql(fable, "SELECT count(*) FROM notes WHERE status IN ('todo', 'in_progress')")
                    ).scalar_one(),
        load_seconds=load, calls={name: [] for name in calls})
    for _ in range(runs):  # the calls take turns: the machine drifts
        for name, call in calls.items():
            begun = time.perf_counter()
            await call()
            result.calls[name].append(time.perf_counter() - begun)
    return result


def figures(r: Result) -> list[Figure]:
    return [Figure(f"Tasks page p50 at {r.notes:,} notes", r.p(PAGE, .5), "ms", "time"),
            Figure(f"Tasks page p95 at {r.notes:,} notes", r.p(PAGE, .95), "ms", "time")]


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    rows = [f"| {name} | {len(samples)} | {machine.ms(r.p(name, .5))} | {machine.ms(r.p(name, .95))} |"
            for name, samples in r.calls.items()]
    p50 = r.p(PAGE, .5)
    met = machine.normalise(p50, "time") < 500
    return "\n".join([
        "## Tasks (`python -m bench.tasks`)",
        "",
        (f"One user holding {r.notes:,} notes ({IMPORTED:,} loaded by `import_notes`, the rest SQL copies of them) "
         f"in {PROJECTS} projects, {r.open_tasks:,} of them open tasks, due within 30 days either side of today. "
         f"Through the dispatcher, one at a time (loading took {r.load_seconds:.0f} s): the Tasks page's calls "
         f"(`list_tasks` 25 a group, `list_projects`, `list_tags`), `list_tasks` alone three ways, `parse_task`, "
         f"a task created (the title rule's scans included), deleted into the trash and restored, `list_trash`. "
         f"Cells are ms."),
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
        f"| Tasks page's calls p50 at {r.notes:,} notes | {machine.ms(p50)} ms | < 500 ms | "
        f"{'yes' if met else '**no**'} |",
    ])


BENCH = Bench("tasks", __doc__, Options, lambda o: on_one_fable(lambda fable: run(fable, o.notes, o.runs)), render,
              figures, quick=Options(notes=2000, runs=10))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
