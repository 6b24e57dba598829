"""bench.structured keeps working as the tools change: a tiny run on the test database."""

from __future__ import annotations

from bench import structured
from bench.harness.machine import record
from bench.harness.memory import PeakMemory
from fable_core.runtime import Fable


async def test_structured_bench_runs_end_to_end_on_a_small_world(fable: Fable) -> None:
    machine = record()
    result = await structured.run(fable, notes=200, people=3, runs=2)
    machine.finish()
    assert len(result.created) == 3 and result.unchanged_vectors == (200, 200)
    assert all(len(s) == 2 for s in result.calls.values())
    markdown = structured.render(result, machine, PeakMemory({}, 1.0))
    assert markdown.startswith("## Structured notes") and "| update_list, 200 items p50 |" in markdown
