"""A scripted agent: file meeting notes in Fable over MCP and turn their actions into tasks.

Run it against any Fable (``fable serve``) with an API key (``fable apikey create --user NAME``)::

    FABLE_URL=http://127.0.0.1:8000/mcp FABLE_API_KEY=fable_... python examples/mcp_agent.py

It uses only the official MCP SDK client. A result's text is compact JSON (no null or empty
fields; ``structured_content`` too when the server runs with ``FABLE_MCP_STRUCTURED=true``); a
refused call is a result with ``is_error`` whose text says what to do, such as the note that
already has this title.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

MEETING = "Meeting with Sam"
ACTIONS = ["Send Sam the contract", "Book the room for Thursday"]


class ToolError(Exception):
    """A tool refused the call; the message is Fable's, written for agents."""


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise ToolError(result.content[0].text)
    return json.loads(result.content[0].text)  # the result: compact JSON text


async def file_meeting(client: Client) -> dict[str, Any]:
    """Create the meeting note, or reuse it when a note with that title already exists."""
    body = "Notes from today.\n\n## Actions\n" + "".join(f"- {a}\n" for a in ACTIONS)
    try:
        return await call(client, "create_note", title=MEETING, body=body, tags=["meetings"])
    except ToolError as e:
        if not str(e).startswith("conflict:"):
            raise
        found = await call(client, "search_notes", query=MEETING, limit=1)
        return found["items"][0]


async def main(url: str, key: str) -> None:
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {key}"}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        tools = {t.name for t in (await client.list_tools()).tools}
        print(f"connected: {len(tools)} tools")
        meeting = await file_meeting(client)
        existing = await call(client, "list_notes", parent_id=meeting["id"], kind="task")
        have = {t["title"] for t in existing["items"]}
        for action in ACTIONS:
            if action not in have:
                await call(client, "create_note", title=action, status="todo", parent_id=meeting["id"])
        tasks = await call(client, "list_notes", parent_id=meeting["id"], kind="task", sort="title")
        print(f"note {meeting['id']} {meeting['title']!r} has {len(tasks['items'])} tasks:")
        for task in tasks["items"]:
            print(f"  [{task['status']}] {task['title']}")


if __name__ == "__main__":
    asyncio.run(main(os.environ.get("FABLE_URL", "http://127.0.0.1:8000/mcp"), os.environ["FABLE_API_KEY"]))
