"""``tools/list`` and ``tools/call``, generated from the registry: no tool is declared here.

Each registered tool becomes an MCP tool with its title, description, flat input schema,
output schema and annotations. Calls go through the one dispatcher as the request's caller;
results come back both as ``structuredContent`` and as compact JSON text for older clients.
Each call is also reported to the client's log (:mod:`fable_mcp.client_log`): failures as
warnings or errors, every call as a debug line with its duration. A streaming tool's progress
(an answer's tokens) goes out as progress notifications when the request carried a token.
"""

from __future__ import annotations

import json
import time
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext

from fable_core.caller import Caller
from fable_core.errors import FableError
from fable_core.runtime import Fable
from fable_core.tools.progress import Progress, ProgressSink
from fable_core.tools.registry import Tool
from fable_mcp.client_log import ClientLog
from fable_mcp.errors import error_result, unexpected_result

__all__ = ["call_tool", "list_tools", "mcp_tool", "progress_notifications"]


def mcp_tool(tool: Tool) -> types.Tool:
    """The MCP description of one registered tool."""
    a = tool.annotations
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        annotations=types.ToolAnnotations(
            title=tool.title,
            read_only_hint=a.read_only,
            destructive_hint=a.destructive,
            idempotent_hint=a.idempotent,
            open_world_hint=a.open_world,
        ),
    )


def list_tools(fable: Fable, caller: Caller) -> types.ListToolsResult:
    """The tools this caller may run: a read-scope key sees only read tools."""
    return types.ListToolsResult(tools=[mcp_tool(t) for t in fable.registry.for_caller(caller)])


def progress_notifications(ctx: ServerRequestContext[Any, Any]) -> ProgressSink:
    """How a streaming tool's progress reaches an MCP client: ``notifications/progress`` on the
    request's progress token, counting items, ``message`` the text of a token (a piece of an
    answer) or the item as JSON. The SDK sends nothing when the request carried no token."""
    count = 0

    async def send(item: Progress) -> None:
        nonlocal count
        count += 1
        if item.event == "token" and isinstance(item.data.get("text"), str):
            message = item.data["text"]
        else:
            message = json.dumps({"event": item.event, **item.data}, ensure_ascii=False, default=str)
        await ctx.session.report_progress(count, None, message)

    return send


async def call_tool(
    fable: Fable, caller: Caller, name: str, arguments: dict[str, Any] | None, log: ClientLog, *,
    progress: ProgressSink | None = None,
) -> types.CallToolResult:
    """Run a tool through the dispatcher; every failure becomes an error result (and a log message)."""
    started = time.perf_counter()
    try:
        result = await fable.dispatcher.call(name, arguments or {}, caller, progress=progress)
    except FableError as e:
        await log.tool_failed(name, e)
        outcome = error_result(e)
    except Exception as e:  # noqa: BLE001 - the surface boundary: logged, never raised to clients
        outcome = unexpected_result(name, e)
        await log.send("error", {"tool": name, "type": "internal_error",
                                 "message": f"{name} failed unexpectedly; the error was logged on the server"})
    else:
        text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
        outcome = types.CallToolResult(content=[types.TextContent(text=text)], structured_content=result)
    await log.tool_called(name, not outcome.is_error, time.perf_counter() - started)
    return outcome
