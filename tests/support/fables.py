"""The one way tests open a Fable of their own: ``fable_with(settings, **changes)``.

Every fixture that needs a Fable configured otherwise than the session's (a fake model server,
fake weather, a read replica) opens it here, so opening, the assistant's test pace and closing
are written once::

    async with fable_with(settings, **ollama_at(url), migrate=False) as app:
        yield app
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fable_core.config import Settings
from fable_core.runtime import Fable

__all__ = ["ASSISTANT_FLUSH", "fable_with", "ollama_at"]

ASSISTANT_FLUSH = 0.05
"""How often a test assistant writes a streaming answer to the database (seconds): fast enough
that a test reading the stored answer waits no longer than it must."""


def ollama_at(url: str, embed_model: str = "fake-embed") -> dict[str, Any]:
    """The settings of a Fable whose model server is the (fake) Ollama at ``url``."""
    return {"llm_provider": "ollama", "ollama_url": url, "embed_model": embed_model}


@asynccontextmanager
async def fable_with(settings: Settings, *, migrate: bool = True, **changes: Any) -> AsyncIterator[Fable]:
    """A Fable on the test database with ``changes`` to ``settings``, closed afterwards; its
    assistant, when one is configured, flushes answers at the tests' pace."""
    app = await Fable.open(settings.model_copy(update=changes), migrate=migrate)
    try:
        if app.assistant is not None:
            app.assistant.flush_interval = ASSISTANT_FLUSH
        yield app
    finally:
        await app.close()
