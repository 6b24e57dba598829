"""The discovery tools, always offered: list the toolsets, enable or disable one for this
session, find a tool by words (:mod:`fable_core.tools.toolsets`).

They work on the caller's :class:`~fable_core.tools.toolsets.ToolChoice`, which the surface
hands the dispatcher (an MCP session's); elsewhere (REST, the CLI) every tool is callable, so
they list and find, and enabling is refused as meaningless. Listed there (``GET /api/toolsets``,
where Settings chooses an API key's or a connection's toolsets), the toolsets are what the
caller's MCP clients may use: not a signed-in session's own account and admin tools. The in-app
assistant has the same ``find_tools``, answered by its tool loop
(:mod:`fable_core.assistant.toolloop`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

from pydantic import BaseModel, Field

from fable_core.errors import InvalidInput
from fable_core.tools.caller import Caller
from fable_core.tools.context import Context
from fable_core.tools.registry import REGISTRY, Route, Tool, tool
from fable_core.tools.results import absent_when_none
from fable_core.tools.tool_search import ToolIndex
from fable_core.tools.toolsets import DISCOVERY, TOOLSETS

__all__ = ["FIND_TOOLS", "MAX_FOUND"]

MAX_FOUND = 5
_INDEXES: dict[int, ToolIndex] = {}  # by registry (tests run registries of their own)


class ToolsetLine(BaseModel):
    name: str
    about: str
    tools: int = Field(description="tools in it you may use over MCP")
    offered: int | None = absent_when_none("of them offered in this session now")


class Toolsets(BaseModel):
    toolsets: list[ToolsetLine]


class ToolsetChanged(BaseModel):
    toolset: str
    enabled: bool
    tools: list[str] = Field(description="its tools offered now")


class FoundTool(BaseModel):
    name: str
    toolset: str
    description: str
    input_schema: dict[str, Any] | None = absent_when_none("its arguments, when newly offered")


class FoundTools(BaseModel):
    tools: list[FoundTool]


def _usable(ctx: Context, caller: Caller | None = None) -> list[Tool]:
    fable = ctx.fable
    return [t for t in fable.registry.for_agents(caller or ctx.caller, fable.availability) if t.name not in DISCOVERY]


def _as_client(ctx: Context) -> Caller:
    """The caller as its MCP clients are: outside an MCP session, a person choosing what a key or
    connection offers sees no session-only tool (an MCP client never runs one)."""
    if ctx.choice is None and ctx.caller.in_person:
        return replace(ctx.caller, credential="key")
    return ctx.caller


@tool(group="toolsets", title="List toolsets", scope="read", assistant=False, route=Route("GET", "/toolsets"))
async def list_toolsets(ctx: Context) -> Toolsets:
    """The toolsets, one line each: enable one with enable_toolset, or find a tool with find_tools."""
    usable = _usable(ctx, _as_client(ctx))
    lines = []
    for name, about in TOOLSETS.items():
        tools = [t for t in usable if t.group == name]
        if tools:
            offered = sum(ctx.choice.offers(t) for t in tools) if ctx.choice is not None else None
            lines.append(ToolsetLine(name=name, about=about, tools=len(tools), offered=offered))
    return Toolsets(toolsets=lines)


@tool(group="toolsets", title="Enable a toolset", scope="read", assistant=False)
async def enable_toolset(ctx: Context, toolset: Annotated[str, Field(min_length=1, max_length=40)],
                         enabled: bool = True) -> ToolsetChanged:
    """Offer a toolset's tools in this session (enabled=false: stop); they are callable at once.

    Args:
        toolset: Its name, from list_toolsets.
    """
    tools = [t for t in _usable(ctx) if t.group == toolset]
    if not tools:
        known = sorted({t.group for t in _usable(ctx)})
        raise InvalidInput(f"no toolset {toolset!r} you can use; use one of {', '.join(known)}", field="toolset")
    if ctx.choice is None:
        raise InvalidInput("toolsets are chosen per MCP session; here every tool is callable", field="toolset")
    if enabled:
        ctx.choice.enable(toolset)
    else:
        ctx.choice.disable(toolset)
    return ToolsetChanged(toolset=toolset, enabled=enabled, tools=[t.name for t in tools if ctx.choice.offers(t)])


@tool(group="toolsets", title="Find tools", scope="read", assistant=False)
async def find_tools(ctx: Context, query: Annotated[str, Field(min_length=1, max_length=200)]) -> FoundTools:
    """Find tools for a job you have no tool for ("add a milestone", "rss feeds"); those found
    can be called from now on.

    Args:
        query: A few words saying what you want to do.
    """
    registry = ctx.fable.registry
    index = _INDEXES.setdefault(id(registry), ToolIndex(registry))
    usable = _usable(ctx)
    if ctx.choice is not None:  # what the client has already is not news
        usable = [t for t in usable if not ctx.choice.offers(t)] or usable
    found = [t for _, t in index.rank(usable, query)][:MAX_FOUND]
    new = set(ctx.choice.add(found)) if ctx.choice is not None else set()
    return FoundTools(tools=[FoundTool(name=t.name, toolset=t.group, description=t.description.split("\n\n")[0],
                                       input_schema=t.input_schema if t.name in new else None) for t in found])


FIND_TOOLS: Tool = REGISTRY.get("find_tools")  # type: ignore[assignment]
