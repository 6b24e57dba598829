"""Ollama through the official ``ollama`` client: streamed chat with tool calls, embeddings,
and model management (list, pull with NDJSON progress, delete, warm).

An answer is complete only once a line says ``done: true``; a stream that ends without one
(the server stopped, the connection dropped) is a cut answer (:class:`~.base.StreamCut`)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from typing import Any

import httpx
import ollama

from fable_core.assistant.providers.base import (
    WHERE,
    ChatChunk,
    Health,
    Message,
    Provider,
    StreamCut,
    ToolCall,
    prompt_tokens,
    unavailable,
)
from fable_core.errors import NotFound

__all__ = ["OllamaProvider"]

_FAILURES = (ConnectionError, httpx.HTTPError, ollama.ResponseError, OSError)
_ids = itertools.count(1)


class OllamaProvider(Provider):
    name = "ollama"
    model: str
    embed_model: str

    def __init__(self, url: str, model: str, embed_model: str, *, num_ctx: int = 16384,
                 timeout: float = 300.0, first_token_timeout: float | None = None) -> None:
        self.url = url.rstrip("/")
        self.model = model
        self.embed_model = embed_model
        self.num_ctx = num_ctx
        self.timeout = timeout
        self.first_token_timeout = first_token_timeout
        self._client = ollama.AsyncClient(
            host=self.url, timeout=httpx.Timeout(timeout, connect=5.0, read=self.read_timeout(timeout)))

    def _down(self, e: BaseException) -> Exception:
        if isinstance(e, ConnectionError | httpx.ConnectError):
            return unavailable(f"could not connect to Ollama at {self.url}: {WHERE.format(setting='OLLAMA_URL')}",
                               provider="ollama")
        if isinstance(e, httpx.TimeoutException):
            return unavailable(f"Ollama at {self.url} did not answer within {self.timeout:g} s "
                               f"({type(e).__name__})", provider="ollama")
        return unavailable(f"Ollama at {self.url} did not answer ({type(e).__name__}: {e})",
                           provider="ollama")

    def chat_stream(
        self, messages: list[Message], tools: list[dict[str, Any]] | None = None, *,
        model: str | None = None, max_tokens: int | None = None,
    ) -> AsyncIterator[ChatChunk]:
        return self.first_in_time(self._chat(messages, tools, model=model or self.model, max_tokens=max_tokens),
                                  prompt_tokens(messages, tools))

    async def _chat(self, messages: list[Message], tools: list[dict[str, Any]] | None, *,
                    model: str, max_tokens: int | None) -> AsyncIterator[ChatChunk]:
        options: dict[str, Any] = {"num_ctx": self.num_ctx}
        if max_tokens:
            options["num_predict"] = max_tokens
        finished = False
        try:
            stream = await self._client.chat(
                model=model, messages=[_to_ollama(m) for m in messages],
                tools=tools or None, stream=True, options=options,
            )
            async for part in stream:
                calls = tuple(
                    ToolCall(f"call_{next(_ids)}", c.function.name, dict(c.function.arguments or {}))
                    for c in part.message.tool_calls or []
                )
                finished = bool(part.done)
                yield ChatChunk(text=part.message.content or "", tool_calls=calls, done=finished)
        except ollama.ResponseError as e:
            if e.status_code == 404 and "not found" in str(e.error).lower():
                raise await self.missing_model(model) from e
            raise self._down(e) from e
        except _FAILURES as e:
            raise self._down(e) from e
        if not finished:
            raise StreamCut(f"the answer from Ollama at {self.url} was cut off before the model finished "
                            "(the stream ended without done: true)", provider="ollama")

    async def embed(self, texts: list[str], *, input_type: str | None = None) -> list[list[float]]:
        try:  # Ollama has no input_type: its texts carry their prefixes
            response = await self._client.embed(model=self.embed_model, input=texts)
        except _FAILURES as e:
            raise self._down(e) from e
        return [list(v) for v in response.embeddings]

    async def health(self) -> Health:
        try:
            listed = await self._client.list()
        except _FAILURES as e:
            return Health("ollama", "down", self.model, self.embed_model, detail=str(e) or type(e).__name__,
                          semantic_off=f"the embedding server at {self.url} does not answer")
        return self.checked([m.model or "" for m in listed.models])

    async def list_models(self) -> list[dict[str, Any]]:
        try:
            listed = await self._client.list()
        except _FAILURES as e:
            raise self._down(e) from e
        return [{"name": m.model, "size": m.size, "modified_at": str(m.modified_at or "")}
                for m in listed.models]

    async def pull(self, name: str) -> AsyncIterator[dict[str, Any]]:
        try:
            async for progress in await self._client.pull(name, stream=True):
                yield progress.model_dump(exclude_none=True)
        except _FAILURES as e:
            raise self._down(e) from e

    async def delete(self, name: str) -> None:
        try:
            await self._client.delete(name)
        except ollama.ResponseError as e:
            if e.status_code == 404:
                raise NotFound(f"model {name!r} is not on the Ollama server at {self.url}", model=name) from e
            raise self._down(e) from e
        except _FAILURES as e:
            raise self._down(e) from e

    async def warm(self, name: str | None = None) -> None:
        try:
            await self._client.generate(model=name or self.model, prompt="", keep_alive="30m")
        except _FAILURES as e:
            raise self._down(e) from e

    async def close(self) -> None:
        await self._client._client.aclose()


def _to_ollama(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message["role"], "content": message.get("content") or ""}
    if message.get("tool_calls"):
        out["tool_calls"] = [{"function": {"name": c["name"], "arguments": c["arguments"]}}
                             for c in message["tool_calls"]]
    if message["role"] == "tool":
        out["tool_name"] = message.get("name", "")
    return out
