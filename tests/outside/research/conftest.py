"""The research tests' own fixture: no run outlives its test (the Fable is the session's)."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator

import pytest
from support.fake_llm import FakeLLM
from support.research import script_run, serve_pages
from support.searxng import FakeSearxng
from support.web_site import FakeSite

from fable_core.outside.research import pipeline
from fable_core.outside.research.runner import generations, research_key
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


@pytest.fixture
def held(llm: FakeLLM, searxng: FakeSearxng, site: FakeSite, site_url: str) -> Iterator[threading.Event]:
    """A run whose outline waits until the test sets the event (released at the end anyway)."""
    hold = threading.Event()
    serve_pages(site, searxng, site_url, n=2)
    script_run(llm, hold=hold)
    yield hold
    hold.set()
