"""A Fable whose assistant talks to the fake Ollama (``support.fake_llm`` over real HTTP), for
the chat's core tests here; the session's ``fable`` has no model at all."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from support.fake_llm import FakeLLM, ollama_app
from support.servers import serve_in_thread

from fable_core.assistant.service import Assistant
from fable_core.config import Settings
from fable_core.runtime import Fable


@pytest.fixture(scope="session")
def fake_state() -> FakeLLM:
    return FakeLLM()


@pytest.fixture
def fake(fake_state: FakeLLM) -> FakeLLM:
    """The fake model's script, empty at the start of each test."""
    fake_state.reset()
    return fake_state


@pytest.fixture(scope="session")
async def ai_fable(settings: Settings, fake_state: FakeLLM) -> AsyncIterator[Fable]:
    with serve_in_thread(ollama_app(fake_state)) as url:
        app = await Fable.open(settings.model_copy(update={
            "llm_provider": "ollama", "ollama_url": url, "embed_model": "fake-embed"}))
        app.assistant.flush_interval = 0.05
        try:
            yield app
        finally:
            await app.close()


@pytest.fixture
def assistant(ai_fable: Fable, fake: FakeLLM) -> Assistant:
    return ai_fable.assistant


@pytest.fixture(autouse=True)
async def _settle(ai_fable: Fable) -> AsyncIterator[None]:
    """After each test, the assistant's background work ends before the tables are emptied."""
    yield
    a: Assistant = ai_fable.assistant
    for key in list(a.generations._buffers):
        await a.generations.wait(key)
    await a.generations.close()
    if a.summaries is not None:
        await a.summaries.cancel()
    if a.worker is not None:
        await a.worker.idle()
    await ai_fable.dispatcher.usage.flush()


