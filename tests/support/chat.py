"""Small helpers shared by the assistant tests."""

from __future__ import annotations

from typing import Any

from fable_core.assistant.service import Assistant
from fable_core.infra.generations import StreamEvent
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

