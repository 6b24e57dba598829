"""Fixtures for the assistant: scripted fake Ollama / OpenAI servers on 127.0.0.1 and a Fable
whose provider is the fake Ollama (the session's ``fable`` has no provider at all)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from support.assistants import settle
from support.fables import fable_with, ollama_at
from support.fake_llm import FakeLLM, ollama_app, openai_app
from support.servers import serve_in_thread

from fable_core.assistant.service import Assistant
from fable_core.config import Settings
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

EMBED_MODEL = "fake-embed"


@pytest.fixture(scope="session")
def fake_state() -> FakeLLM:
    return FakeLLM()


@pytest.fixture
def fake(fake_state: FakeLLM) -> FakeLLM:
    """The script of both fake servers, empty at the start of each test."""
    fake_state.reset()
    return fake_state


@pytest.fixture(scope="session")
def ollama_url(fake_state: FakeLLM) -> Iterator[str]:
    with serve_in_thread(ollama_app(fake_state)) as url:
        yield url


@pytest.fixture(scope="session")
def openai_url(fake_state: FakeLLM) -> Iterator[str]:
    with serve_in_thread(openai_app(fake_state, api_key="test-key")) as url:
        yield url + "/v1"


@pytest.fixture(scope="session")
def ai_settings(settings: Settings, ollama_url: str) -> Settings:
    return settings.model_copy(update=ollama_at(ollama_url, EMBED_MODEL))


@pytest.fixture(scope="session")
async def ai_fable(ai_settings: Settings) -> AsyncIterator[Fable]:
    """A Fable on the test database whose assistant talks to the fake Ollama."""
    async with fable_with(ai_settings) as app:
        yield app


@pytest.fixture
def assistant(ai_fable: Fable, fake: FakeLLM) -> Assistant:
    return ai_fable.assistant


@pytest.fixture(autouse=True)
async def _settle(ai_fable: Fable) -> AsyncIterator[None]:
    """After each test, let the assistant's background work finish (or cancel it) before the
    tables are truncated: generations, embeddings (incl. the start-up backfill), summaries."""
    yield
    await settle(ai_fable)


@pytest.fixture
def as_admin(alice: Caller) -> Caller:
    return Caller(user_id=alice.user_id, username=alice.username, role="admin")
