"""A Fable whose assistant talks to the fake Ollama (``support.fake_llm`` over real HTTP), for
the chat's core tests here; the session's ``fable`` has no model at all."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from support.assistants import fable_on_fake_ollama, settle
from support.fake_llm import FakeLLM

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
    async with fable_on_fake_ollama(settings, fake_state) as app:
        yield app


@pytest.fixture
def assistant(ai_fable: Fable, fake: FakeLLM) -> Assistant:
    return ai_fable.assistant


@pytest.fixture(autouse=True)
async def _settle(ai_fable: Fable) -> AsyncIterator[None]:
    yield
    await settle(ai_fable)
