"""The provider interface: streamed chat with tool calls, embeddings, health, model management.

Messages use one neutral shape (OpenAI's): ``{"role", "content"}``, assistant turns may carry
``tool_calls`` (:class:`ToolCall` dicts), tool results are ``{"role": "tool", "tool_call_id",
"name", "content"}``. Each provider translates to its wire format. Every failure to reach the
model becomes :class:`~fable_core.errors.Unavailable` with a message starting "no model
available" and naming the cause (a model the server does not serve, with the ones it does; a
refused connection; a timeout), so surfaces answer 503 / ``isError`` and the rest of Fable
carries on.

**A stream is complete only when the server says so** (OpenAI: a ``finish_reason`` on the
choice; Ollama: ``done: true``). A stream that ends without that mark (llama.cpp's server ends a
running answer with ``[DONE]`` and no ``finish_reason`` when another request arrives) raises
:class:`StreamCut` after its last chunk, so whoever reads it, the chat, note assist, titles and
summaries, never takes a cut answer for a whole one. A server that sends nothing for
``first_token_timeout`` seconds (``LLM_FIRST_TOKEN_TIMEOUT``) fails as :class:`TooSlow`, saying
it is slow (with the prompt's size), not absent; that setting, not the client's read timeout,
governs the wait before the first token.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn, TypeVar

from fable_core.errors import Unavailable

__all__ = ["NO_MODEL", "URL_SETTING", "WHERE", "ChatChunk", "Health", "NoProvider", "Provider", "StreamCut",
           "TooSlow", "ToolCall", "prompt_tokens", "served", "unavailable"]

Message = dict[str, Any]
T = TypeVar("T")
_MODEL_LIST_TIMEOUT = 3.0  # listing the served models to name them in an error


WHERE = ("set {setting} to where the model server runs, or LLM_PROVIDER=none to run Fable without a model "
         "(docs/configuration.md)")
"""How an operator fixes a model server Fable cannot reach: said with the refusal, not only in the log."""
NO_MODEL = ("LLM_PROVIDER is none: set it to ollama (with OLLAMA_URL) or openai (with OPENAI_BASE_URL) to use a "
            "model (docs/configuration.md)")
"""How an operator gives a Fable without a model one."""
URL_SETTING = {"ollama": "OLLAMA_URL", "openai": "OPENAI_BASE_URL"}
"""The setting that says where each provider's server runs."""


def unavailable(what: str, **details: Any) -> Unavailable:
    """The one error an unreachable or unconfigured model produces."""
    return Unavailable(f"no model available: {what}", **details)


class TooSlow(Unavailable):
    """Raised when a model has not started answering within ``LLM_FIRST_TOKEN_TIMEOUT``: a server
    that is there but slow (a CPU model reading a long prompt) is said to be slow, with what to
    change, never "no model available"."""

    type = "slow"


def prompt_tokens(messages: list[Message], tools: list[dict[str, Any]] | None) -> int:
    """About how many tokens a server reads for ``messages`` and ``tools``: JSON schema text runs
    near 3.2 bytes a token, prose near 4 (measured on llama.cpp's tokenizer counts)."""
    prose = sum(len(str(m.get("content") or "")) for m in messages)
    schema = len(json.dumps(tools, separators=(",", ":"))) if tools else 0
    return round(prose / 4 + schema / 3.2)


class StreamCut(Unavailable):
    """Raised when a model's answer ended before the model said it had finished (no
    ``finish_reason``, no ``done: true``): what arrived is a fragment, never an answer."""

    type = "interrupted"


def served(name: str, models: list[str]) -> bool:
    """Whether the server lists ``name`` (Ollama's ``llama3.2`` is ``llama3.2:latest``)."""
    return name in models or (":" not in name and f"{name}:latest" in models)


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]

    def as_message_part(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True, slots=True)
class ChatChunk:
    """A piece of a streamed answer: some text, and/or complete tool calls, or the end."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    done: bool = False


@dataclass(frozen=True, slots=True)
class Health:
    provider: str
    status: Literal["ok", "busy", "down", "disabled", "model missing"]
    model: str | None = None
    embed_model: str | None = None
    detail: str = ""
    models: list[str] = field(default_factory=list)
    semantic_off: str = ""  # why search cannot use embeddings now ("" when it can)

    def to_dict(self) -> dict[str, Any]:
        setting = URL_SETTING.get(self.provider, "the provider's URL")
        fix = {"down": WHERE.format(setting=setting), "disabled": NO_MODEL}.get(self.status)
        return {"provider": self.provider, "status": self.status, "model": self.model,
                "embed_model": self.embed_model, "detail": self.detail, **({"fix": fix} if fix else {}),
                "semantic_search": {"on": not self.semantic_off, "reason": self.semantic_off}}


class Provider:
    """Base class; subclasses implement the wire protocol. Model management is optional."""

    name = "base"
    url = ""
    model: str | None = None
    embed_model: str | None = None
    first_token_timeout: float | None = None
    known_models: list[str] | None = None  # the server's model list at the last health check

    def chat_stream(
        self, messages: list[Message], tools: list[dict[str, Any]] | None = None, *,
        model: str | None = None, max_tokens: int | None = None,
    ) -> AsyncIterator[ChatChunk]:
        raise NotImplementedError

    async def complete(self, messages: list[Message], *, max_tokens: int | None = None) -> str:
        """The whole answer to ``messages`` (no tools) as one string."""
        parts = [chunk.text async for chunk in self.chat_stream(messages, None, max_tokens=max_tokens)]
        return "".join(parts)

    async def embed(self, texts: list[str], *, input_type: str | None = None) -> list[list[float]]:
        """One vector per text. ``input_type`` (``query`` or ``document``), when given, is sent
        to servers that mark texts themselves (see ``fable_core.assistant.prefixes``)."""
        raise NotImplementedError

    async def health(self) -> Health:
        raise NotImplementedError

    def checked(self, models: list[str]) -> Health:
        """The health of a server that answered with ``models``: ``model missing`` unless it
        serves the chat model; semantic search is off unless it serves the embedding model."""
        self.known_models = models
        semantic_off = "no embedding model is configured (EMBED_MODEL)" if not self.embed_model else "" if served(
            self.embed_model, models) else f"the embedding model {self.embed_model!r} is not served by {self.url}"
        if self.model and not served(self.model, models):
            return Health(self.name, "model missing", self.model, self.embed_model,
                          detail=self.not_served(self.model, models), models=models, semantic_off=semantic_off)
        return Health(self.name, "ok", self.model, self.embed_model, models=models, semantic_off=semantic_off)

    def not_served(self, model: str, models: list[str] | None) -> str:
        available = ", ".join(models) if models else "none"
        return f"model {model!r} is not served by {self.url}; available: {available}"

    async def missing_model(self, model: str) -> Unavailable:
        """The error for a model the server refused as unknown, naming the ones it serves (from
        the last health check, else asked now, briefly)."""
        models = self.known_models
        if models is None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(_MODEL_LIST_TIMEOUT):
                    models = [str(m["name"]) for m in await self.list_models()]
        return unavailable(self.not_served(model, models), provider=self.name, model=model)

    def read_timeout(self, timeout: float) -> float:
        """The client's read timeout: never under ``first_token_timeout``, the wait it governs (a
        CPU server reading a long prompt sends nothing, not even headers, before its first token)."""
        return max(timeout, self.first_token_timeout or 0.0)

    async def first_in_time(self, stream: AsyncIterator[T], prompt: int = 0) -> AsyncIterator[T]:
        """``stream``, failing in words when its first item takes longer than
        ``first_token_timeout`` seconds (a slow, hung or overloaded server); ``prompt``: about
        how many tokens the server reads first, said with the failure."""
        iterator = aiter(stream)
        try:
            try:
                async with asyncio.timeout(self.first_token_timeout):
                    first = await anext(iterator)
            except StopAsyncIteration:
                return
            except TimeoutError as e:
                raise TooSlow(
                    f"{self.url} has not started answering after {self.first_token_timeout:g} s: a model on a CPU "
                    f"may still be reading the prompt (about {prompt:,} tokens); raise LLM_FIRST_TOKEN_TIMEOUT "
                    "(docs/configuration.md) or use a smaller prompt", provider=self.name,
                    timeout=self.first_token_timeout, prompt_tokens=prompt) from e
            yield first
            async for item in iterator:
                yield item
        finally:
            close = getattr(iterator, "aclose", None)
            if close is not None:
                await close()

    async def list_models(self) -> list[dict[str, Any]]:
        raise unavailable(f"{self.name} cannot list models")

    def pull(self, name: str) -> AsyncIterator[dict[str, Any]]:
        raise unavailable(f"{self.name} cannot pull models")

    async def delete(self, name: str) -> None:
        raise unavailable(f"{self.name} cannot delete models")

    async def warm(self, name: str | None = None) -> None:
        raise unavailable(f"{self.name} cannot warm models")

    async def close(self) -> None:
        return None


class NoProvider(Provider):
    """``LLM_PROVIDER=none``: every LLM call refuses with a clear error; nothing else changes."""

    name = "none"

    async def _refuse(self) -> NoReturn:
        raise unavailable("LLM_PROVIDER is none", provider="none")

    def chat_stream(self, messages: list[Message], tools: list[dict[str, Any]] | None = None,
                    **_: Any) -> AsyncIterator[ChatChunk]:
        raise unavailable("LLM_PROVIDER is none", provider="none")

    async def embed(self, texts: list[str], *, input_type: str | None = None) -> list[list[float]]:
        return await self._refuse()

    async def health(self) -> Health:
        return Health("none", "disabled", detail="LLM_PROVIDER is none")
