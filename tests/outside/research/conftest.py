"""The research tests' own fixture: no run outlives its test (the Fable is the session's)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from fable_core.research import pipeline
from fable_core.research.runner import generations, research_key
from fable_core.runtime import Fable


@pytest.fixture(autouse=True)
async def _no_run_left(outside_fable: Fable) -> AsyncIterator[None]:
    yield
    runs = generations(outside_fable)
    for user_id in range(1, 6):  # the test's users: ids restart at 1 in every test
        runs.forget(research_key(user_id))
        await runs.wait(research_key(user_id))


@pytest.fixture(autouse=True)
def _quick_stagger(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """Searches start 10 ms apart instead of 200 (but in the test of the stagger itself)."""
    if "stagger" not in request.node.name:
        monkeypatch.setattr(pipeline, "STAGGER", 0.01)
