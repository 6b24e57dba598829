"""Structured notes and calculate: the tools' cost through the dispatcher, among many notes.

    python -m bench.structured [--notes 20000] [--people 500] [--runs 200] [--no-write]

One fresh embedded PostgreSQL in a temporary directory. One user's first 1,000 notes are loaded
by ``import_notes`` (``bench.harness.corpus``), the rest are SQL copies of them up to ``--notes``; then
``--people`` people are created by ``save_person`` (email, organisation, role: timed), and one
list of 200 items by ``create_list``.

Timed, one call at a time, the calls taking turns after a warm-up: ``calculate`` (arithmetic,
and a date question that looks up the user's today), ``save_person`` updating a person by name
(a field merged, a version kept), ``update_list`` checking and unchecking an item of the
200, ``get_list``, ``list_entities`` (a page of 50 people), ``read_note`` of a person, and
``search_notes`` for a person's email among every note. Results go to the "structured" section
of docs/benchmarks.md.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
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

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    notes: int = 20_000
    people: int = 500
    runs: int = option(200, "calls of each kind")


IMPORTED = 1000
LIST_ITEMS = 200


@dataclass
class Result:
    notes: int
    people: int
    load_seconds: float
    unchanged_vectors: tuple[int, int] = (0, 0)  # plain notes whose search vector is as before 0020, of all
    created: list[float] = field(default_factory=list)  # save_person creating, seconds
    calls: dict[str, list[float]] = field(default_factory=dict)  # call -> seconds

    def p(self, name: str, q: float) -> float:
        ms = sorted(s * 1000 for s in (self.created if name == "save_person, creating" else self.calls[name]))
        return ms[min(len(ms) - 1, round(q * (len(ms) - 1)))]


async def run(fable: Fable, notes: int, people: int, runs: int) -> Result:
    started = time.perf_counter()
    me = await _make_user(fable)
    await import_corpus(fable, me, Corpus(seed=5), min(IMPORTED, notes))
    if notes > IMPORTED:
        async with fable.db.engine.begin() as conn:
            await conn.execute(text("""
                INSERT INTO notes (user_id, title, title_key, body, tags, version)
                SELECT n.user_id, left(n.title || ' ' || g, 300), left(n.title_key || ' ' || g, 300), n.body,
                       n.tags, 1
                FROM notes n, generate_series(1, :copies) g WHERE n.user_id = :me ORDER BY g, n.id LIMIT :more"""),
                {"me": me.user_id, "copies": notes // IMPORTED + 1, "more": notes - IMPORTED})
    load = time.perf_counter() - started
    result = Result(notes=notes, people=people, load_seconds=load)
    for n in range(people):
        begun = time.perf_counter()
        await fable.call("save_person", {"person": f"Person {n:04d}", "fields": {
            "email": f"person{n}@example{n % 7}.org", "organisation": f"Org {n % 40}", "role": "engineer"}}, me)
        result.created.append(time.perf_counter() - begun)
    shopping = await fable.call("create_list", {"title": "Big list", "items": [f"item {i}" for i in range(LIST_ITEMS)]},
                                me)
    async with fable.db.engine.begin() as conn:
        await conn.execute(text("ANALYZE"))
        same, plain = (await conn.execute(text(
            f"SELECT count(*) FILTER (WHERE search_vector = {_VECTOR_BEFORE}), count(*) FROM notes "
            "WHERE entity IS NULL"))).one()
        result.unchanged_vectors = (same, plain)
    chosen = min(7, people - 1)
    name, email = f"Person {chosen:04d}", f"person{chosen}@example{chosen % 7}.org"
    person = await fable.call("save_person", {"person": name}, me)
    flip = [0]

    async def toggle() -> None:
        flip[0] += 1
        await fable.call("update_list", {"note_id": shopping["id"], "check" if flip[0] % 2 else "uncheck": [100]}, me)

    calls: dict[str, Callable[[], Awaitable[Any]]] = {
        "calculate, arithmetic": lambda: fable.call("calculate", {"expression": "(3.5 + 2) * 4^2 - 15% of 240"}, me),
        "calculate, days until a date": lambda: fable.call("calculate", {"expression": "days until 2027-03-01"}, me),
        "save_person, updating by name": lambda: fable.call(
            "save_person", {"person": name, "fields": {"phone": f"+1 555 {flip[0]:04d}"}}, me),
        f"update_list, {LIST_ITEMS} items": toggle,
        f"get_list, {LIST_ITEMS} items": lambda: fable.call("get_list", {"note_id": shopping["id"]}, me),
        "list_entities, 50 people": lambda: fable.call("list_entities", {"kind": "person", "limit": 50}, me),
        "read_note, a person": lambda: fable.call("read_note", {"note_id": person["id"]}, me),
        "search_notes, a person's email": lambda: fable.call("search_notes", {"query": email}, me),
    }
    for call in calls.values():
        for _ in range(5):
            await call()
    result.calls = {name: [] for name in calls}
    for _ in range(runs):
        for name, call in calls.items():
            begun = time.perf_counter()
            await call()
            result.calls[name].append(time.perf_counter() - begun)
            if name == "save_person, updating by name":
                flip[0] += 1
    found = await fable.call("search_notes", {"query": email}, me)
    assert found["items"] and found["items"][0]["id"] == person["id"], found
    return result


# notes.search_vector before migration 0020 added the fields' words
_VECTOR_BEFORE = ("setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A') || "
                  "setweight(to_tsvector('english'::regconfig, fable_tag_words(tags)), 'B') || "
                  "setweight(to_tsvector('english'::regconfig, coalesce(body, '')), 'C')")
_TARGETS = [("calculate, arithmetic", 10), (f"update_list, {LIST_ITEMS} items", 30),
            ("search_notes, a person's email", 30)]


def figures(r: Result) -> list[Figure]:
    return [Figure(f"{name} p50", r.p(name, .5), "ms", "time") for name, _ in _TARGETS]


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    names = ["save_person, creating", *r.calls]
    rows = [f"| {name} | {len(r.created) if name == 'save_person, creating' else len(r.calls[name])} | "
            f"{machine.ms(r.p(name, .5))} | {machine.ms(r.p(name, .95))} |" for name in names]
    targets = [f"| {name} p50 | {machine.ms(r.p(name, .5))} ms | < {goal} ms | "
               f"{'yes' if machine.normalise(r.p(name, .5), 'time') < goal else '**no**'} |" for name, goal in _TARGETS]
    return "\n".join([
        "## Structured notes and calculate (`python -m bench.structured`)",
        "",
        (f"One user holding {r.notes:,} notes ({IMPORTED:,} loaded by `import_notes`, the rest SQL copies of them; "
         f"loaded in {r.load_seconds:.0f} s), {r.people:,} people made by `save_person` and a list of {LIST_ITEMS} "
         f"items. Each call through the dispatcher, one at a time, the calls taking turns. Cells are ms."),
        "",
        machine.describe(),
        "",
        "| Call | Samples | p50 | p95 |",
        "|---|---:|---:|---:|",
        *rows,
        "",
        (f"Search is not slower for notes without fields: of the {r.unchanged_vectors[1]:,} plain notes (and tasks), "
         f"{r.unchanged_vectors[0]:,} have the very search vector the expression before migration 0020 gives (the "
         "fields' words are an empty vector for them), so `search_notes` reads the same index and vectors as "
         "before; what it reads besides is the `kind` of each hit, now `coalesce(entity, ...)`."),
        "",
        ("Measured once (December 2026): `python -m bench.search --sizes 2000,20000 --runs 40` on the commit "
         "before 0020 and on 0020, both at the same time on the loaded 2-core machine (load average 6), raw "
         "mixed p50 / p95 ms at 2,000 and 20,000 notes: before 18.65 / 39.03 and 23.32 / 49.50, after "
         "20.43 / 44.06 and 23.23 / 48.43; every ranking row 100% in both."),
        "",
        memory.describe(),
        "",
        "| Target (judged at the reference speed) | Measured | Goal | Met |",
        "|---|---|---|---|",
        *targets,
    ])


BENCH = Bench("structured", __doc__, Options,
              lambda o: on_one_fable(lambda fable: run(fable, o.notes, o.people, o.runs)), render, figures,
              quick=Options(notes=2000, people=50, runs=20))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
