"""What a streaming tool reports while it works, and where it goes.

A stream tool (``@tool(stream=True)``) calls ``await ctx.progress(event, data)`` as it goes: the
tokens of an answer, the context it drew on, each tool call it made. The dispatcher hands each
item to the sink the surface gave it; each surface maps items in one place (MCP: progress
notifications; REST: the generic SSE form of the tool's route; the assistant's tool loop: its
own events). A call without a sink simply returns its result.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Progress", "ProgressSink"]


@dataclass(frozen=True, slots=True)
class Progress:
    """One item: its kind (``token``, ``context``, ...), its data, and, for streams a client can
    resume (a chat answer), an id to resume after."""

    event: str
    data: dict[str, Any]
    id: str | None = None


ProgressSink = Callable[[Progress], Awaitable[None]]
