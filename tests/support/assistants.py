"""A Fable whose assistant talks to the fake Ollama (``support.fake_llm``, over real HTTP), and
what a test does before its tables are emptied: let the assistant's background work end."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fable_core.config import Settings
from fable_core.runtime import Fable

from .fables import fable_with, ollama_at
from .fake_llm import FakeLLM, ollama_app
from .servers import serve_in_thread

__all__ = ["fable_on_fake_ollama", "settle"]


@asynccontextmanager
async def fable_on_fake_ollama(settings: Settings, fake: FakeLLM) -> AsyncIterator[Fable]:
    """A Fable on ``settings``' database whose model is ``fake`` served as Ollama; answers are
    flushed every 50 ms (tests read them soon after)."""
    with serve_in_thread(ollama_app(fake)) as url:
        async with fable_with(settings, **ollama_at(url)) as app:
            assert app.assistant is not None
            yield app


async def settle(fable: Fable) -> None:
    """The assistant's background work ends (answers, embeddings incl. the start-up backfill,
    summaries) and this test's usage rows are written, before the tables are emptied: ids
    restart in the next test, so no buffer may outlive this one."""
    assistant = fable.assistant
    assert assistant is not None
    for key in list(assistant.generations._buffers):
        await assistant.generations.wait(key)
    await assistant.generations.close()
    if assistant.summaries is not None:
        await assistant.summaries.cancel()
    if assistant.worker is not None:
        await assistant.worker.idle()
    await fable.dispatcher.usage.flush()
