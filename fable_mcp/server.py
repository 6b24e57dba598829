"""The Fable MCP server: the SDK's low-level ``Server`` wired to the registry and dispatcher.

The low-level server takes the registry's schemas as they are (the high-level ``MCPServer``
would re-derive them from signatures) and handles ``logging/setLevel`` (log messages:
:mod:`fable_mcp.client_log`) and resource subscriptions. One :class:`FableMcp` serves every
transport: stdio and in-memory with a fixed local caller, HTTP with the caller each request
authenticated as.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import mcp_types as types
from mcp.server import NotificationOptions, Server
from mcp.server.context import ServerRequestContext
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.idempotency import META_KEY
from fable_core.tools.toolsets import check_toolsets
from fable_mcp import client_log, completions, prompts, resources, tools
from fable_mcp.client_log import ClientLog
from fable_mcp.errors import protocol_errors, resource_not_found
from fable_mcp.identity import resolve_caller
from fable_mcp.instructions import INSTRUCTIONS
from fable_mcp.subscriptions import Subscriptions
from fable_mcp.toolchoices import ToolChoices

__all__ = ["FableMcp", "build_server"]

_log = logging.getLogger(__name__)
Ctx = ServerRequestContext[Any, Any]


def _version() -> str:
    try:
        return version("fable")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0"


class _Server(Server[Any]):
    """The SDK's low-level server, announcing that the tool list changes (tools that need the
    LLM come and go with it) to every transport that asks it for its options, and that the
    prompt list does not."""

    def create_initialization_options(
        self, notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), experimental_capabilities, extensions)

    def get_capabilities(
        self, notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None, *, protocol_version: str | None = None,
    ) -> types.ServerCapabilities:
        """As the SDK derives them, but Fable's prompts are fixed: their list never changes, so no
        protocol says it might (on 2026-07-28 the SDK would, for any server serving listen streams)."""
        capabilities = super().get_capabilities(notification_options, experimental_capabilities, extensions,
                                                protocol_version=protocol_version)
        if capabilities.prompts is not None:
            capabilities.prompts = types.PromptsCapability(list_changed=False)
        return capabilities


class FableMcp:
    """MCP handlers over one :class:`~fable_core.runtime.Fable`.

    ``caller`` is the local identity for transports without credentials (stdio, in-memory);
    over HTTP leave it None so that every request must carry its own.
    """

    def __init__(self, fable: Fable, caller: Caller | None = None, toolsets: Sequence[str] | None = None) -> None:
        self.fable = fable
        self.caller = caller
        self.subscriptions = Subscriptions()
        if toolsets is None:
            default = check_toolsets(fable.registry, fable.settings.fable_mcp_toolsets, source="FABLE_MCP_TOOLSETS")
        else:
            default = check_toolsets(fable.registry, toolsets, source="--toolsets")
        self.choices = ToolChoices(default, self.subscriptions)
        self._telling: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop the server runs in (its lifespan)
        self.server: Server[Any] = _Server(
            "fable",
            version=_version(),
            title="Fable",
            description="Your notes, tasks and projects.",
            instructions=INSTRUCTIONS,
            lifespan=self._lifespan,
            get_tool_input_schema=self.input_schema,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource,
            on_subscribe_resource=self._subscribe,
            on_unsubscribe_resource=self._unsubscribe,
            on_subscriptions_listen=self._listen,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            on_completion=self._complete,
        )
        # Registered directly: the constructor argument warns that 2026-07-28 drops logging,
        # but 2025 clients (and the conformance suite) still send logging/setLevel.
        self.server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, self._set_level)

    def _caller(self, ctx: Ctx) -> Caller:
        return resolve_caller(ctx, self.caller)

    @asynccontextmanager
    async def _lifespan(self, _: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        """Listen to committed changes while any transport runs this server."""
        self.subscriptions.attach(self.fable.events, self.fable.changes, self.fable.db)
        self._loop = asyncio.get_running_loop()
        stop_hearing = self.fable.availability.subscribe(self._tools_changed)
        try:
            yield {}
        finally:
            stop_hearing()
            self.subscriptions.detach()

    def _tools_changed(self) -> None:
        """Availability changed, perhaps from another thread: tell clients from this server's loop."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._tell_tools_changed)

    def _tell_tools_changed(self) -> None:
        task = asyncio.get_running_loop().create_task(self.subscriptions.tools_changed())
        self._telling.add(task)
        task.add_done_callback(self._telling.discard)

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """A tool's input schema, for checking ``Mcp-Param-*`` headers against its arguments."""
        found = self.fable.registry.get(name)
        return found.input_schema if found else None

    async def _list_tools(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        caller = self._caller(ctx)
        self.subscriptions.listed_tools(ctx)
        return tools.list_tools(self.fable, caller, self.choices.of(ctx, caller))

    async def _call_tool(self, ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        caller = self._caller(ctx)
        found = self.fable.registry.get(params.name)
        tools.require_client_capabilities(found if found and found.allows(caller) else None,
                                          ctx.session.client_capabilities)
        log = ClientLog(ctx)
        return await tools.call_tool(self.fable, caller, params.name, params.arguments, log,
                                     progress=tools.progress_notifications(ctx), choice=self.choices.of(ctx, caller),
                                     idempotency_key=(ctx.meta or {}).get(META_KEY))

    @protocol_errors
    async def _list_resources(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        cursor = params.cursor if params else None
        return await resources.list_resources(self.fable, self._caller(ctx), cursor)

    async def _list_templates(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return resources.list_templates()

    async def _read_resource(self, ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            return await self._read(ctx, uri)
        except MCPError as e:
            answer = resource_not_found(e, uri, ctx.protocol_version)
            if answer is e:
                raise
            raise answer from e

    @protocol_errors
    async def _read(self, ctx: Ctx, uri: str) -> types.ReadResourceResult:
        return await resources.read_resource(self.fable, self._caller(ctx), uri)

    @protocol_errors
    async def _subscribe(self, ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        await self.subscriptions.subscribe(ctx, self._caller(ctx), str(params.uri))
        return types.EmptyResult()

    async def _unsubscribe(self, ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        self.subscriptions.unsubscribe(ctx, str(params.uri))
        return types.EmptyResult()

    @protocol_errors
    async def _listen(
        self, ctx: Ctx, params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        return await self.subscriptions.listen(ctx, self._caller(ctx), params)

    async def _list_prompts(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return prompts.list_prompts()

    @protocol_errors
    async def _get_prompt(self, ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        return await prompts.get_prompt(self.fable, self._caller(ctx), params.name, params.arguments)

    @protocol_errors
    async def _complete(self, ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        return await completions.complete(self.fable, self._caller(ctx), params)

    async def _set_level(self, ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
        """Keep the client's log level for its session: later log messages below it are not sent."""
        client_log.set_level(ctx, params.level)
        return types.EmptyResult()


def build_server(fable: Fable, caller: Caller | None = None, toolsets: Sequence[str] | None = None) -> Server[Any]:
    """A ready MCP server for ``fable``, as ``caller`` when the transport has no credentials,
    offering ``toolsets`` unless a client's credential says otherwise (None: FABLE_MCP_TOOLSETS)."""
    return FableMcp(fable, caller, toolsets).server
