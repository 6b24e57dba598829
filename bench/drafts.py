"""Drafts benchmark: what the editor's safety net costs, through the dispatcher.

    python -m bench.drafts [--runs 200] [--no-write]

One fresh embedded PostgreSQL in a temporary directory, one user. Timed, one at a time after a
warm-up: ``save_draft`` (the editor's autosave, 1.5 s after typing stops) of a 20 KB body,
``get_draft`` (opening a note), and ``merge_note_edit`` (the conflict view) on notes of 200,
2,000 and 10,000 lines, each given one edit near its start saved as a new version ("theirs") and
one edit near its end ("yours"): a clean merge, the three-way diff over the whole body. Targets:
autosave p50 < 20 ms, merge of a 2,000-line note p50 < 100 ms. Results go to the "drafts" section
of docs/benchmarks.md.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bench.core import _make_user
from bench.harness.bench import Bench
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.report import Figure
from bench.harness.session import on_one_fable
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    runs: int = option(200, "calls of each kind")


SIZES = (200, 2_000, 10_000)  # lines of the merged notes


@dataclass
class Result:
    calls: dict[str, list[float]] = field(default_factory=dict)  # call -> seconds

    def p(self, name: str, q: float) -> float:
        ms = sorted(s * 1000 for s in self.calls[name])
        return ms[min(len(ms) - 1, round(q * (len(ms) - 1)))]


def _body(lines: int) -> str:
    return "\n".join(f"## Part {i // 20}" if i % 20 == 0 else f"Line {i} of the plan, with a few more words."
                     for i in range(lines))


async def _merge(fable: Fable, me: Caller, lines: int) -> Callable[[], Awaitable[Any]]:
    body = _body(lines)
    note = await fable.call("create_note", {"title": f"Plan of {lines} lines", "body": body}, me)
    await fable.call("update_note", {"note_id": note["id"], "body": body.replace("Line 3 of", "Line 3 (theirs) of")},
                     me)
    yours = body.replace(f"Line {lines - 2} of", f"Line {lines - 2} (yours) of")

    async def merge() -> None:
        merged = await fable.call("merge_note_edit", {"note_id": note["id"], "base_version": 1, "body": yours}, me)
        assert merged["clean"]

    return merge


async def run(fable: Fable, runs: int) -> Result:
    me = await _make_user(fable)
    note = await fable.call("create_note", {"title": "Edited", "body": "start"}, me)
    typed = "A paragraph typed in the editor, long enough to be a real note's. " * 300  # ~20 KB
    calls: dict[str, Callable[[], Awaitable[Any]]] = {
        "save_draft, 20 KB": lambda: fable.call("save_draft", {"note_id": note["id"], "title": "Edited", "body": typed,
                                                               "base_version": 1}, me),
        "get_draft": lambda: fable.call("get_draft", {"note_id": note["id"]}, me),
        **{f"merge_note_edit, {n:,} lines": await _merge(fable, me, n) for n in SIZES},
    }
    for call in calls.values():
        for _ in range(3):
            await call()
    result = Result(calls={name: [] for name in calls})
    for _ in range(runs):  # the calls take turns: the machine drifts
        for name, call in calls.items():
            begun = time.perf_counter()
            await call()
            result.calls[name].append(time.perf_counter() - begun)
    return result


def figures(r: Result) -> list[Figure]:
    return [Figure("save_draft p50", r.p("save_draft, 20 KB", .5), "ms", "time"),
            Figure("merge 2,000 lines p50", r.p("merge_note_edit, 2,000 lines", .5), "ms", "time")]


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    rows = [f"| {name} | {len(samples)} | {machine.ms(r.p(name, .5))} | {machine.ms(r.p(name, .95))} |"
            for name, samples in r.calls.items()]
    autosave, merge = r.p("save_draft, 20 KB", .5), r.p("merge_note_edit, 2,000 lines", .5)

    def met(ms: float, goal: float) -> str:
        return "yes" if machine.normalise(ms, "time") < goal else "**no**"

    return "\n".join([
        "## Drafts (`python -m bench.drafts`)",
        "",
        ("The editor's safety net through the dispatcher, one user, one call at a time: the autosave "
         "(`save_draft` of a 20 KB body), `get_draft`, and `merge_note_edit` on notes of 200, 2,000 and 10,000 "
         "lines with one edit saved near the start and one near the end (a clean three-way merge). Cells are ms."),
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
        f"| autosave p50 | {machine.ms(autosave)} ms | < 20 ms | {met(autosave, 20)} |",
        f"| merge of a 2,000-line note p50 | {machine.ms(merge)} ms | < 100 ms | {met(merge, 100)} |",
    ])


BENCH = Bench("drafts", __doc__, Options, lambda o: on_one_fable(lambda fable: run(fable, o.runs)), render, figures,
              quick=Options(runs=10))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
