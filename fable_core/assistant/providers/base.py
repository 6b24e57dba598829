"""The provider interface: streamed chat with tool calls, embeddings, health, model management.

Messages use one neutral shape (OpenAI's): ``{"role", "content"}``, assistant turns may carry
``tool_calls`` (:class:`ToolCall` dicts), tool results are ``{"role": "tool", "tool_call_id",
"name", "content"}``. Each provider translates to its wire format. Every failure to reach the
model becomes :class:`~fable_core.errors.Unavailable` with a message starting "no model
available", so surfaces answer 503 / ``isError`` and the rest of Fable carries on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn

from fable_core.errors import Unavailable

__all__ = ["ChatChunk", "Health", "NoProvider", "Provider", "ToolCall", "unavailable"]

Message = dict[str, Any]


def unavailable(what: str, **details: Any) -> Unavailable:
    """The one error an unreachable or unconfigured model produces."""
    return Unavailable(f"no model available: {what}", **details)


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
    status: Literal["ok", "down", "disabled"]
    model: str | None = None
    embed_model: str | None = None
    detail: str = ""
    models: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"provider": self.provider, "status": self.status, "model": self.model,
                "embed_model": self.embed_model, "detail": self.detail}


class Provider:
    """Base class; subclasses implement the wire protocol. Model management is optional."""

    name = "base"
    model: str | None = None
    embed_model: str | None = None

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
