"""``tools/list`` and ``tools/call``, generated from the registry: no tool is declared here.

Each registered tool the caller may use becomes an MCP tool: name, title, description, flat
input schema and the annotations that differ from MCP's defaults. Tools a caller cannot use are
not listed: write tools for a read-only key, admin tools for everyone else, tools whose service
(the LLM) does not answer now; clients that listed tools hear ``notifications/tools/list_changed``
when the last changes. Of those, a client is offered what its choice of toolsets offers
(:mod:`fable_core.tools.toolsets`, :mod:`fable_mcp.toolchoices`): the default set unless told
otherwise; a tool outside it is refused until its toolset is enabled or it is found.

Calls go through the one dispatcher as the request's caller. A result is one text block of
compact JSON (no nulls, no empty fields: :mod:`fable_core.tools.compact`), which is what a model
reads; with ``FABLE_MCP_STRUCTURED`` tools/list also carries output schemas and each result its
``structuredContent``. Each call is also reported to the client's log
(:mod:`fable_mcp.client_log`): failures as warnings or errors, every call as a debug line with
its duration. A binary result (an image) is an ``ImageContent`` block. A streaming tool's
progress (an answer's tokens) goes out as progress notifications when the request carried a token.
A tool that relies on a client capability (``client_needs``: sampling, elicitation, roots) is
refused before it runs when the client did not declare it: JSON-RPC error -32021 naming the
missing capabilities (``data.requiredCapabilities``), which the transport sends with HTTP 400.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from fable_core.errors import FableError
from fable_core.runtime import Fable
from fable_core.tools.binary import Blob, Download
from fable_core.tools.caller import Caller
from fable_core.tools.compact import compact
from fable_core.tools.idempotency import check_key
from fable_core.tools.progress import Progress, ProgressSink
from fable_core.tools.registry import Tool
from fable_core.tools.toolsets import ToolChoice
from fable_mcp.client_log import ClientLog
from fable_mcp.errors import error_result, unexpected_result

__all__ = ["blob_result", "call_tool", "list_tools", "mcp_tool", "offered",
           "progress_notifications", "require_client_capabilities"]

def offered(fable: Fable, caller: Caller, choice: ToolChoice) -> list[Tool]:
    """The tools this caller is offered over MCP: those it may use that its choice offers."""
    return [t for t in fable.registry.for_agents(caller, fable.availability) if choice.offers(t)]


def mcp_tool(tool: Tool, *, structured: bool = False) -> types.Tool:
    """The MCP description of one registered tool. Annotations say only what differs from MCP's
    defaults (not read-only, destructive, not idempotent, open world); the title is said once."""
    a = tool.annotations
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema if structured and not tool.signature.blob else None,  # bytes: no JSON
        annotations=types.ToolAnnotations(
            read_only_hint=True if a.read_only else None,
            destructive_hint=False if not a.read_only and not a.destructive else None,
            idempotent_hint=True if not a.read_only and a.idempotent else None,
            open_world_hint=False if not a.open_world else None,
        ),
    )


def list_tools(fable: Fable, caller: Caller, choice: ToolChoice) -> types.ListToolsResult:
    structured = fable.settings.fable_mcp_structured
    return types.ListToolsResult(tools=[mcp_tool(t, structured=structured) for t in offered(fable, caller, choice)])


def require_client_capabilities(tool: Tool | None, declared: types.ClientCapabilities | None) -> None:
    """Refuse a call whose tool relies on client capabilities the client did not declare (in its
    ``initialize`` or, on 2026-07-28, in the request's ``_meta``): -32021, ``data.requiredCapabilities``
    a ``ClientCapabilities`` object of the missing ones, e.g. ``{"sampling": {}}``."""
    if tool is None or not tool.client_needs:
        return
    have = declared.model_dump(exclude_none=True) if declared is not None else {}
    missing = sorted(need for need in tool.client_needs if need not in have)
    if missing:
        raise MCPError(types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                       f"{tool.name} needs the client capabilities {', '.join(missing)}, undeclared by this client",
                       data={"requiredCapabilities": {need: {} for need in missing}})


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
    progress: ProgressSink | None = None, choice: ToolChoice | None = None, idempotency_key: object = None,
) -> types.CallToolResult:
    """Run a tool through the dispatcher; every failure becomes an error result (and a log message).
    ``idempotency_key``: the request's ``_meta.idempotencyKey`` (:mod:`fable_core.tools.idempotency`)."""
    started = time.perf_counter()
    try:
        key = None if idempotency_key is None else check_key(idempotency_key)
        model = await fable.dispatcher.run(name, arguments or {}, caller, progress=progress, choice=choice,
                                           idempotency_key=key)
    except FableError as e:
        await log.tool_failed(name, e)
        outcome = error_result(e)
    except Exception as e:  # noqa: BLE001 - the surface boundary: logged, never raised to clients
        outcome = unexpected_result(name, e)
        await log.send("error", {"tool": name, "type": "internal_error",
                                 "message": f"{name} failed unexpectedly; the error was logged on the server"})
    else:
        outcome = (blob_result(model) if isinstance(model, Blob)
                   else _json_result(fable, model.described()) if isinstance(model, Download)  # never streamed here
                   else _json_result(fable, model.model_dump(mode="json")))
    await log.tool_called(name, not outcome.is_error, time.perf_counter() - started)
    return outcome


def _json_result(fable: Fable, result: dict[str, Any]) -> types.CallToolResult:
    text = json.dumps(compact(result), ensure_ascii=False, separators=(",", ":"))
    structured = result if fable.settings.fable_mcp_structured else None
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)


def blob_result(blob: Blob) -> types.CallToolResult:
    """A binary result as MCP carries it: an image as ``ImageContent``, anything else as an
    embedded resource's blob; both base64."""
    data = base64.b64encode(blob.content).decode("ascii")
    if blob.content_type.startswith("image/"):
        return types.CallToolResult(content=[types.ImageContent(data=data, mime_type=blob.content_type)])
    resource = types.BlobResourceContents(uri="fable:blob", blob=data, mime_type=blob.content_type)
    return types.CallToolResult(content=[types.EmbeddedResource(resource=resource)])
