"""Small helpers shared by the assistant tests."""

from __future__ import annotations

from typing import Any

from fable_core.assistant.generation import StreamEvent
from fable_core.assistant.service import Assistant
from fable_core.caller import Caller
from fable_core.runtime import Fable


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

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import uvicorn
from starlette.types import ASGIApp


@asynccontextmanager
async def serve(app: ASGIApp) -> AsyncIterator[str]:
    """Run ``app`` under uvicorn on 127.0.0.1 in this event loop; yields its base URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError("uvicorn did not start")
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


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
