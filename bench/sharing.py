"""Sharing benchmark: what sharing costs the reads of a user others share with.

    python -m bench.sharing [--users 100] [--notes-per-user 1000] [--shares 10000] [--runs 200] [--no-write]

One fresh embedded PostgreSQL in a temporary directory. User 0's notes are loaded by
``import_notes`` (``bench.harness.corpus``: Markdown bodies of several hundred characters); the other
users' notes are SQL copies of them (titles numbered), so 100 users hold 100,000 notes. Each
user has 20 projects holding four notes in five; 100 groups of 10 users make 1,000 group
memberships. The same calls of user 0 are timed twice through the dispatcher, one at a time:
first with nothing shared, then after 10,000 shares are made (50 of them share other users'
projects with user 0, the rest share random projects and notes with random users and groups):
``list_notes`` (the first page, newest first), ``search_notes`` (the mixed query set of
``bench.search``) and ``read_note`` of an own note and of a note in a shared project.

Targets: with 50 shared projects, ``list_notes`` and ``search_notes`` p50 within 1.5x of the
same calls with nothing shared; a share check adds < 0.5 ms to ``read_note`` (a shared note
against an own one). Results go to the "sharing" section of docs/benchmarks.md.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import insert, text

from bench.core import _make_user
from bench.harness.bench import Bench
from bench.harness.corpus import Corpus
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.report import Figure
from bench.harness.session import on_one_fable
from bench.imports import import_corpus
from bench.search import _classes
from fable_core.db.models import Share
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    users: int = 100
    notes_per_user: int = 1000
    shares: int = 10_000
    runs: int = option(200, "calls of each kind, each time")


PROJECTS_PER_USER = 20
SHARED_WITH_USER = 50
GROUPS, GROUP_SIZE = 100, 10


@dataclass
class Timings:
    calls: dict[str, list[float]] = field(default_factory=dict)  # call -> seconds

    def p(self, name: str, q: float) -> float:
        ms = sorted(s * 1000 for s in self.calls[name])
        return ms[min(len(ms) - 1, round(q * (len(ms) - 1)))]


@dataclass
class Result:
    users: int
    notes: int
    shares: int
    memberships: int
    shared_projects: int
    shared_notes: int  # notes user 0 reaches through shares
    load_seconds: float
    alone: Timings
    shared: Timings


async def _sql(fable: Fable, sql: str, **params: Any) -> Any:
    async with fable.db.engine.begin() as conn:
        return await conn.execute(text(sql), params)


async def _world(fable: Fable, users: int, per_user: int, runs: int) -> tuple[list[Caller], list[str]]:
    """The users, their notes (user 0's imported, the others' copied) and projects, the groups;
    and the search queries, drawn from user 0's notes alone (``bench.search``'s classes)."""
    callers = [await _make_user(fable) for _ in range(users)]
    await import_corpus(fable, callers[0], Corpus(seed=7), per_user)
    await _sql(fable, "ANALYZE notes")
    classes = await _classes(fable, callers[0], Corpus(seed=7), max(1, runs // 10), seed=1)
    first = callers[0].user_id
    await _sql(fable, """
        INSERT INTO notes (user_id, title, title_key, body, tags, status, priority, due_date, version)
        SELECT u.id, left(n.title || ' ' || u.id, 300), left(n.title_key || ' ' || u.id, 300), n.body, n.tags,
               n.status, n.priority, n.due_date, 1
        FROM notes n, users u WHERE n.user_id = :first AND u.id <> :first""", first=first)
    await _sql(fable, """
        INSERT INTO projects (user_id, title) SELECT u.id, 'Project ' || g FROM users u, generate_series(1, :n) g""",
               n=PROJECTS_PER_USER)
    await _sql(fable, """
        UPDATE notes SET project_id = p.id FROM (
            SELECT n.id AS note_id, row_number() OVER (PARTITION BY n.user_id ORDER BY n.id) AS k FROM notes n) r,
            projects p
        WHERE notes.id = r.note_id AND r.k % 5 <> 0 AND p.user_id = notes.user_id
          AND p.title = 'Project ' || (r.k / 5 % :n + 1)""", n=PROJECTS_PER_USER)
    await _sql(fable, "INSERT INTO groups (name) SELECT 'Group ' || g FROM generate_series(1, :n) g", n=GROUPS)
    await _sql(fable, """
        INSERT INTO group_members (group_id, user_id)
        SELECT g.id, u.id FROM groups g CROSS JOIN LATERAL (
            SELECT id FROM users ORDER BY md5(g.id::text || id::text) LIMIT :size) u""", size=GROUP_SIZE)
    await _sql(fable, "ANALYZE")
    return callers, [q for qs in classes.values() for q in qs]


async def _share(fable: Fable, me: Caller, shares: int) -> tuple[int, int]:
    """``shares`` shares: one project of each of 50 other users with ``me``, the rest random
    projects and notes of others (two in three with a user, one in three with a group), none
    reaching ``me`` (never to them, nor to a group of theirs), so that ``me`` reaches the 50
    projects. Returns how many projects and notes ``me`` then reaches through them."""
    rng = random.Random(5)
    projects = (await _sql(fable, "SELECT id, user_id FROM projects WHERE user_id <> :me ORDER BY id",
                           me=me.user_id)).all()
    notes = (await _sql(fable, "SELECT id, user_id FROM notes WHERE user_id <> :me ORDER BY id", me=me.user_id)).all()
    users = [u for (u,) in (await _sql(fable, "SELECT id FROM users WHERE id <> :me", me=me.user_id)).all()]
    groups = [g for (g,) in (await _sql(fable, "SELECT id FROM groups WHERE id NOT IN (SELECT group_id FROM"
                                               " group_members WHERE user_id = :me)", me=me.user_id)).all()]
    rows: dict[tuple[str, int, str, int], dict[str, Any]] = {}
    mine: dict[int, int] = {}  # owner -> their first project
    for project_id, owner in projects:  # one project of each of the first 50 other users
        mine.setdefault(owner, project_id)
    for owner, project_id in list(mine.items())[:SHARED_WITH_USER]:
        rows["p", project_id, "u", me.user_id] = {"owner_id": owner, "project_id": project_id,
                                                   "grantee_user_id": me.user_id, "permission": "editor"}
    for _ in range(shares * 3):
        if len(rows) >= shares:
            break
        item_id, owner = rng.choice(projects) if rng.random() < 0.5 else rng.choice(notes)
        kind = "p" if (item_id, owner) in projects else "n"
        grantee = ("g", rng.choice(groups)) if groups and rng.random() < 1 / 3 else ("u", rng.choice(users))
        if grantee[0] == "u" and grantee[1] == owner:
            continue
        rows.setdefault((kind, item_id, *grantee), {
            "owner_id": owner, "project_id": item_id if kind == "p" else None,
            "note_id": item_id if kind == "n" else None,
            "grantee_user_id": grantee[1] if grantee[0] == "u" else None,
            "grantee_group_id": grantee[1] if grantee[0] == "g" else None,
            "permission": rng.choice(["viewer", "editor", "admin"])})
    async with fable.db.engine.begin() as conn:
        await conn.execute(insert(Share), [{"note_id": None, "project_id": None, "grantee_user_id": None,
                                            "grantee_group_id": None, **row} for row in rows.values()])
        await conn.execute(text("ANALYZE shares"))
    counts = (await _sql(fable, """
        SELECT count(*) FILTER (WHERE project_id IS NOT NULL), (
            SELECT count(*) FROM notes WHERE project_id IN (SELECT project_id FROM shares WHERE grantee_user_id = :me))
        FROM shares WHERE grantee_user_id = :me""", me=me.user_id)).one()
    return counts[0], counts[1]


async def _time(calls: dict[str, list[Callable[[], Awaitable[Any]]]]) -> Timings:
    """Each call's variants, the calls taking turns (the machine drifts), after a warm-up."""
    for variants in calls.values():
        for call in variants[:5]:
            await call()
    timings = Timings({name: [] for name in calls})
    for i in range(max(len(v) for v in calls.values())):
        for name, variants in calls.items():
            if i < len(variants):
                started = time.perf_counter()
                await variants[i]()
                timings.calls[name].append(time.perf_counter() - started)
    return timings


def _calls(fable: Fable, me: Caller, queries: list[str], own: int, shared: int | None,
           runs: int) -> dict[str, list[Callable[[], Awaitable[Any]]]]:
    calls: dict[str, list[Callable[[], Awaitable[Any]]]] = {
        "list_notes": [lambda: fable.call("list_notes", {}, me)] * runs,
        "search_notes": [lambda q=q: fable.call("search_notes", {"query": q}, me) for q in queries],  # type: ignore[misc]
        "read_note (own)": [lambda: fable.call("read_note", {"note_id": own}, me)] * runs,
    }
    if shared is not None:
        calls["read_note (shared)"] = [lambda: fable.call("read_note", {"note_id": shared}, me)] * runs
    return calls


async def run(fable: Fable, users: int, per_user: int, shares: int, runs: int) -> Result:
    started = time.perf_counter()
    callers, queries = await _world(fable, users, per_user, runs)
    me = callers[0]
    load = time.perf_counter() - started
    own = (await _sql(fable, "SELECT min(id) FROM notes WHERE user_id = :me", me=me.user_id)).scalar_one()
    alone = await _time(_calls(fable, me, queries, own, None, runs))
    projects, shared_notes = await _share(fable, me, shares)
    shared = (await _sql(fable, """SELECT min(n.id) FROM notes n JOIN shares s ON s.project_id = n.project_id
                                  WHERE s.grantee_user_id = :me""", me=me.user_id)).scalar_one()
    with_shares = await _time(_calls(fable, me, queries, own, shared, runs))
    counts = (await _sql(fable, "SELECT (SELECT count(*) FROM notes), (SELECT count(*) FROM shares),"
                                " (SELECT count(*) FROM group_members)")).one()
    return Result(users, counts[0], counts[1], counts[2], projects, shared_notes, load, alone, with_shares)


def figures(r: Result) -> list[Figure]:
    return [
        Figure("list_notes p50 ratio, shared / alone", r.shared.p("list_notes", .5) / r.alone.p("list_notes", .5), "x"),
        Figure("search_notes p50 ratio, shared / alone",
               r.shared.p("search_notes", .5) / r.alone.p("search_notes", .5), "x"),
        Figure("read_note p50, shared - own", r.shared.p("read_note (shared)", .5) - r.shared.p("read_note (own)", .5),
               "ms", "time"),
        Figure("list_notes p50 with shares", r.shared.p("list_notes", .5), "ms", "time"),
        Figure("search_notes p50 with shares", r.shared.p("search_notes", .5), "ms", "time"),
    ]


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    rows = []
    for name in r.shared.calls:
        alone = f"{machine.ms(r.alone.p(name, .5))} / {machine.ms(r.alone.p(name, .95))}" if name in r.alone.calls \
            else "-"
        rows.append(f"| {name} | {len(r.shared.calls[name])} | {alone} | "
                    f"{machine.ms(r.shared.p(name, .5))} / {machine.ms(r.shared.p(name, .95))} |")
    list_ratio = r.shared.p("list_notes", .5) / r.alone.p("list_notes", .5)
    search_ratio = r.shared.p("search_notes", .5) / r.alone.p("search_notes", .5)
    check = r.shared.p("read_note (shared)", .5) - r.shared.p("read_note (own)", .5)
    check_ref = machine.normalise(check, "time")
    return "\n".join([
        "## Sharing (`python -m bench.sharing`)",
        "",
        (f"{r.users} users holding {r.notes:,} notes (user 0's {r.notes // r.users:,} loaded by `import_notes`, the "
         f"others' SQL copies of them), {PROJECTS_PER_USER} projects each holding four notes in five, "
         f"{r.memberships:,} group memberships, then {r.shares:,} shares: {r.shared_projects} of them share other "
         f"users' projects with user 0, who then reaches {r.shared_notes:,} notes of others besides their own. "
         f"User 0's calls through the dispatcher, one at a time, before and after the shares are made "
         f"(loading took {r.load_seconds:.0f} s). Cells are p50 / p95 ms."),
        "",
        machine.describe(),
        "",
        "| Call | Samples | Nothing shared | 50 projects shared with the user |",
        "|---|---:|---:|---:|",
        *rows,
        "",
        memory.describe(),
        "",
        "| Target (judged at the reference speed) | Measured | Goal | Met |",
        "|---|---|---|---|",
        f"| list_notes p50, shared / nothing shared | {list_ratio:.2f}x | <= 1.5x | "
        f"{'yes' if list_ratio <= 1.5 else '**no**'} |",
        f"| search_notes p50, shared / nothing shared | {search_ratio:.2f}x | <= 1.5x | "
        f"{'yes' if search_ratio <= 1.5 else '**no**'} |",
        f"| read_note p50, a shared note minus an own one | {machine.ms(check)} ms | < 0.5 ms | "
        f"{'yes' if check_ref < 0.5 else '**no**'} |",
    ])


BENCH = Bench("sharing", __doc__, Options,
              lambda o: on_one_fable(lambda fable: run(fable, o.users, o.notes_per_user, o.shares, o.runs)), render,
              figures, quick=Options(users=10, notes_per_user=300, shares=500, runs=20))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
