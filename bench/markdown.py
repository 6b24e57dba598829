"""Markdown benchmark: rendering notes to sanitised HTML, and plain-text previews in lists.

    python -m bench.markdown [--notes 2000] [--runs 200]

One fresh embedded PostgreSQL in a temporary directory; ``--notes`` notes of ``bench.harness.corpus``
(Markdown bodies with headings, lists, code and wikilinks) loaded by ``import_notes``.

Timed, one at a time after a warm-up:
- ``render_markdown`` of the corpus's bodies, and of one note using every feature (callout,
  tasks, highlighted code, math, footnotes, a table, tags): parse, render, sanitise;
- ``render_note`` of a note embedding three others (the lookups of links and embeds included):
  what ``GET /api/notes/{id}/html`` spends beyond reading the note;
- ``plain_text`` of a body (a preview), and ``list_notes`` (30 a page) through the dispatcher with
  and without ``preview``: what previews add to the notes page.
Targets: a corpus note rendered p50 < 5 ms, the feature-rich one < 20 ms; previews add < 10 ms to
a page of 30. Results go to the "markdown" section of docs/benchmarks.md.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bench.core import _make_user
from bench.harness.bench import Bench
from bench.harness.corpus import Corpus, describe_bodies
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.report import Figure
from bench.harness.session import on_one_fable
from bench.imports import import_corpus
from fable_core.knowledge.plaintext import plain_text
from fable_core.runtime import Fable
from fable_web.render import render_markdown, render_note

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    notes: int = 2000
    runs: int = 200


RICH = """# Week plan

Plans with ==the important part== and #kitchen/bread, see https://example.org/bread.

> [!tip] Before you start
> Read the recipe twice[^1].

- [ ] buy flour
- [x] clean the oven
- [ ] call [[Bakery|the bakery]] about [[Recipe#Dough]]

```python
def knead(minutes: int) -> str:
    return "done" * minutes
```

Area: $\\pi r^2$, and $$\\sum_{i=1}^{n} i = \\frac{n(n+1)}{2}$$

| step | time |
|------|------|
| rise | 2 h  |
| bake | 40 min |

[^1]: Or three times.
"""
TARGETS = {"corpus note": 5.0, "feature-rich note": 20.0, "preview cost, page of 30": 10.0}


@dataclass
class Result:
    notes: int
    runs: int
    times: dict[str, list[float]] = field(default_factory=dict)  # call -> milliseconds

    def p50(self, name: str) -> float:
        return statistics.median(self.times[name])

    def p95(self, name: str) -> float:
        values = sorted(self.times[name])
        return values[min(len(values) - 1, int(0.95 * len(values)))]


async def _time(result: Result, name: str, runs: int, call: Callable[[int], Awaitable[Any]]) -> None:
    await call(0)  # warm-up
    spent = []
    for i in range(runs):
        started = time.perf_counter()
        await call(i)
        spent.append((time.perf_counter() - started) * 1000)
    result.times[name] = spent


async def run(fable: Fable, notes: int, runs: int) -> Result:
    me = await _make_user(fable)
    result = Result(notes, runs)
    corpus = Corpus(seed=7)
    await import_corpus(fable, me, corpus, notes)
    bodies = [spec.body for spec in Corpus(seed=7).notes(min(notes, 500))]
    for title, body in (("Recipe", "## Dough\n\nflour and water\n\n## Bake\n\n40 minutes"),
                        ("Bakery", "Open *daily*.\n\n- [ ] ask about rye"), ("Oven", "Hot. ![[Bakery]]")):
        await fable.call("create_note", {"title": title, "body": body}, me)
    host = "![[Recipe#Dough]]\n\n![[Bakery]]\n\n![[Oven]]\n\nSee [[Recipe]]."

    async def corpus_note(i: int) -> str:
        return render_markdown(bodies[i % len(bodies)], lambda title: 1)

    async def rich(i: int) -> str:
        return render_markdown(RICH, lambda title: 1)

    async def embeds(i: int) -> str:
        return await render_note(fable, me, host)

    async def preview(i: int) -> str:
        return plain_text(bodies[i % len(bodies)], 140)

    async def listed(i: int) -> Any:
        return await fable.call("list_notes", {"limit": 30}, me)

    async def previewed(i: int) -> Any:
        return await fable.call("list_notes", {"limit": 30, "preview": True}, me)

    await _time(result, "corpus note", runs, corpus_note)
    await _time(result, "feature-rich note", runs, rich)
    await _time(result, "note with 3 embeds (lookups included)", runs, embeds)
    await _time(result, "plain_text preview of a body", runs, preview)
    await _time(result, "list_notes, 30", runs, listed)
    await _time(result, "list_notes, 30 with previews", runs, previewed)
    cost = [b - a for a, b in zip(sorted(result.times["list_notes, 30"]),
                                  sorted(result.times["list_notes, 30 with previews"]), strict=True)]
    result.times["preview cost, page of 30"] = cost
    return result


def figures(r: Result) -> list[Figure]:
    return [Figure(f"{name} p50", r.p50(name), "ms", "time") for name in TARGETS]


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    rows = [f"| {name} | {machine.ms(r.p50(name))} | {machine.ms(r.p95(name))} |" for name in r.times]
    targets = [f"| {name} p50 | {machine.normalise(r.p50(name), 'time'):.2f} ms | < {goal:g} ms | "
               f"{'yes' if machine.normalise(r.p50(name), 'time') < goal else '**no**'} |"
               for name, goal in TARGETS.items()]
    return "\n".join([
        "## Markdown",
        "",
        (f"`python -m bench.markdown --notes {r.notes} --runs {r.runs}`: {describe_bodies()}, rendered to sanitised "
         "HTML (markdown-it-py with its plugins, Pygments, latex2mathml, nh3), one at a time; a note using every "
         "feature; a note embedding three others through `render_note` (its title lookups in PostgreSQL included); "
         "plain-text previews alone and in `list_notes` through the dispatcher. Figures in ms."),
        "",
        machine.describe(),
        "",
        "| Call | p50 | p95 |",
        "|---|---:|---:|",
        *rows,
        "",
        memory.describe(),
        "",
        "| Target (judged at the reference speed) | Measured | Goal | Met |",
        "|---|---|---|---|",
        *targets,
    ])


BENCH = Bench("markdown", __doc__, Options, lambda o: on_one_fable(lambda fable: run(fable, o.notes, o.runs)), render,
              figures, quick=Options(notes=300, runs=20))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
