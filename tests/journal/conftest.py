"""Journal fixtures: fast users, a Fable whose assistant talks to a scripted fake Ollama (for the
opener a model writes and for talking in the journal), and a section registered for one test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from support.fables import fable_with, ollama_at
from support.fake_llm import FakeLLM, ollama_app
from support.servers import serve_in_thread
from support.users import quick_user

from fable_core.config import Settings
from fable_core.daily.journal.sections import SECTIONS, section
from fable_core.runtime import Fable

alice = quick_user("alice")
bob = quick_user("bob")


@pytest.fixture(scope="session")
def journal_llm_state() -> FakeLLM:
    return FakeLLM()


@pytest.fixture
def llm(journal_llm_state: FakeLLM) -> FakeLLM:
    """The fake model's script, empty at the start of the test."""
    journal_llm_state.reset()
    return journal_llm_state


@pytest.fixture(scope="session")
def journal_llm_url(journal_llm_state: FakeLLM) -> Iterator[str]:
    with serve_in_thread(ollama_app(journal_llm_state)) as url:
        yield url


@pytest.fixture(scope="session")
def ai_settings(settings: Settings, journal_llm_url: str) -> Settings:
    return settings.model_copy(update=ollama_at(journal_llm_url))


@pytest.fixture(scope="session")
async def ai_fable(ai_settings: Settings) -> AsyncIterator[Fable]:
    """A Fable on the test database whose model is the fake Ollama."""
    async with fable_with(ai_settings) as app:
        yield app


@pytest.fixture
async def settled(ai_fable: Fable) -> AsyncIterator[Fable]:
    """``ai_fable``, its answers finished before the tables are emptied."""
    yield ai_fable
    assistant = ai_fable.assistant
    assert assistant is not None
    for key in list(assistant.generations._buffers):
        await assistant.generations.wait(key)
    await assistant.generations.close()
    if assistant.worker is not None:
        await assistant.worker.idle()
    await ai_fable.dispatcher.usage.flush()


@pytest.fixture
def extra_section() -> Iterator[Any]:
    """``extra_section(name, order, gather, render)``: a section registered for this test only."""
    added: list[str] = []

    def register(name: str, order: int, gather: Any, render: Any = lambda data: f"**{data}**") -> None:
        section(name, order=order, render=render)(gather)
        added.append(name)

    yield register
    for name in added:
        SECTIONS.pop(name, None)
