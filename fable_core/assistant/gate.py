"""A fair share of the model server: each user's model requests are capped.

A model answers one request at a time per slot, often slowly; without a cap one user starting
a dozen quick captures (or summaries, or chats) would queue everyone else behind them. A user
may have ``per_user`` requests running (``LLM_CONCURRENCY_PER_USER``); up to four times as many
more wait their turn, and beyond that a request is refused at once with ``RateLimited``. The
gate wraps the provider per caller (:func:`model_for`), so every path to the model passes it:
tools, chat turns and what they do afterwards (titles, summaries).

**One server, one request in flight** (``LLM_SERVER_CONCURRENCY``; by default 1 for an
OpenAI-compatible server, whose llama.cpp kind ends a running stream when another request arrives,
and 4 for Ollama, which queues them itself): past that, requests wait in this process, those a
user waits for first and background work (:func:`background`) after them. Fable never interrupts
its own answers. Embedding requests are not counted (they go to ``EMBED_BASE_URL`` when set).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fable_core.assistant.parts import LLM, MODEL_GATE
from fable_core.assistant.providers.base import ChatChunk, Health, Message, NoProvider, Provider
from fable_core.errors import RateLimited
from fable_core.tools.caller import Caller

if TYPE_CHECKING:
    from fable_core.tools.runtime import Runtime

__all__ = ["GatedProvider", "ModelGate", "background", "model_for"]

WAITING_FACTOR = 4
_BACKGROUND: ContextVar[bool] = ContextVar("fable_model_background", default=False)


@contextmanager
def background() -> Iterator[None]:
    """Model requests made inside wait behind those a user waits for (an answer, a capture):
    titles, summaries, journal prep, profile learning, research sections."""
    token = _BACKGROUND.set(True)
    try:
        yield
    finally:
        _BACKGROUND.reset(token)


@dataclass
class _Share:
    running: asyncio.Semaphore
    admitted: int = 0  # running + waiting


class ModelGate:
    """Per-user counters of model requests, in this process."""

    def __init__(self, per_user: int, server: int | None = None) -> None:
        self.per_user = per_user
        self.limit = per_user * (1 + WAITING_FACTOR)
        self._shares: dict[int, _Share] = {}
        self.running = 0  # requests holding a slot now, all users together
        self._quiet = asyncio.Event()  # set while running == 0
        self._quiet.set()
        self.server = server  # requests in flight to the server at once (None: no cap)
        self._free = server or 0
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []  # (background?, arrival, wake)
        self._arrivals = itertools.count()

    @asynccontextmanager
    async def turn(self, user_id: int) -> AsyncIterator[None]:
        """Hold one of the user's slots for the duration of a model request."""
        share = self._shares.get(user_id)
        if share is None:
            share = self._shares[user_id] = _Share(asyncio.Semaphore(self.per_user))
        if share.admitted >= self.limit:
            raise RateLimited(f"you have {share.admitted} model requests running or waiting; "
                              "retry when one has finished", retry_after=5, limit=self.limit)
        share.admitted += 1
        try:
            async with share.running:
                await self._server_slot()
                self.running += 1
                self._quiet.clear()
                try:
                    yield
                finally:
                    self.running -= 1
                    if self.running == 0:
                        self._quiet.set()
                    self._give_back()
        finally:
            share.admitted -= 1
            if share.admitted == 0:
                self._shares.pop(user_id, None)

    async def _server_slot(self) -> None:
        """One of the server's slots (``LLM_SERVER_CONCURRENCY``): at once when one is free and
        nobody waits, else in turn, a user's requests before background ones, each in arrival order."""
        if self.server is None:
            return
        if self._free > 0 and not self._waiting:
            self._free -= 1
            return
        wake: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (int(_BACKGROUND.get()), next(self._arrivals), wake))
        try:
            await wake
        except asyncio.CancelledError:
            if wake.done() and not wake.cancelled():  # given the slot as it gave up: pass it on
                self._give_back()
            raise

    def _give_back(self) -> None:
        if self.server is None:
            return
        while self._waiting:
            *_, wake = heapq.heappop(self._waiting)
            if not wake.done():  # not given up meanwhile
                wake.set_result(None)
                return
        self._free += 1

    async def quiet(self) -> None:
        """Return once no model request is running (at once when none is)."""
        while self.running > 0:
            await self._quiet.wait()

    def in_use(self, user_id: int) -> int:
        share = self._shares.get(user_id)
        return share.admitted if share else 0


class GatedProvider(Provider):
    """``inner`` as seen by one user: chat requests go through the gate; the rest pass. With
    ``model`` (the user's ``default_model``), chat requests ask for that model."""

    def __init__(self, inner: Provider, gate: ModelGate, user_id: int, model: str | None = None) -> None:
        self.inner = inner
        self.gate = gate
        self.user_id = user_id
        self.name = inner.name
        self.model = model or inner.model
        self.embed_model = inner.embed_model

    def chat_stream(self, messages: list[Message], tools: list[dict[str, Any]] | None = None, *,
                    model: str | None = None, max_tokens: int | None = None) -> AsyncIterator[ChatChunk]:
        stream = self.inner.chat_stream(messages, tools, model=model or self.model,  # NoProvider refuses here
                                        max_tokens=max_tokens)
        return self._gated(stream)

    async def _gated(self, stream: AsyncIterator[ChatChunk]) -> AsyncIterator[ChatChunk]:
        try:
            async with self.gate.turn(self.user_id):
                async for chunk in stream:
                    yield chunk
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()

    async def embed(self, texts: list[str], *, input_type: str | None = None) -> list[list[float]]:
        return await self.inner.embed(texts, input_type=input_type)

    async def health(self) -> Health:
        return await self.inner.health()

    async def list_models(self) -> list[dict[str, Any]]:
        return await self.inner.list_models()

    def pull(self, name: str) -> AsyncIterator[dict[str, Any]]:
        return self.inner.pull(name)

    async def delete(self, name: str) -> None:
        await self.inner.delete(name)

    async def warm(self, name: str | None = None) -> None:
        await self.inner.warm(name)


def model_for(fable: Runtime | None, caller: Caller) -> Provider:
    """The installed model provider as ``caller`` may use it (NoProvider when there is none)."""
    provider = fable.part(LLM) if fable is not None else None
    if provider is None or isinstance(provider, NoProvider):
        return NoProvider()
    gate = fable.part(MODEL_GATE) if fable is not None else None
    return GatedProvider(provider, gate, caller.user_id) if gate is not None else provider
