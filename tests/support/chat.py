"""Small helpers shared by the assistant tests."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from fable_core.assistant.generation import StreamEvent
from fable_core.assistant.service import Assistant
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def new_conversation(fable: Fable, caller: Caller, **arguments: Any) -> int:
    return (await fable.call("create_conversation", arguments, caller))["id"]


async def turn(assistant: Assistant, caller: Caller, conversation_id: int, content: str,
               **options: Any) -> list[StreamEvent]:
    """Send a message and follow the generation to its end."""
    await assistant.send(caller, conversation_id, content, **options)
    events = [e async for e in assistant.follow(caller, conversation_id)]
    await assistant.wait(conversation_id)
    return events


def text_of(events: list[StreamEvent]) -> str:
    return "".join(e.data["text"] for e in events if e.event == "token")


# --- real HTTP ----------------------------------------------------------------------------------


async def sse_events(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """Parsed SSE frames: {"id", "event", "data" (decoded JSON)}; comments are skipped."""
    fields: dict[str, Any] = {}
    async for line in response.aiter_lines():
        if line == "":
            if fields:
                fields["data"] = json.loads(fields.get("data", "null"))
                yield fields
                fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
