"""``fable mcp --remote URL``: a local stdio server that forwards to a remote Fable's ``/mcp``.

Claude Desktop on a laptop speaks stdio; Fable runs on a home server. The bridge connects to
the remote with the API key (``FABLE_API_KEY`` or ``--api-key-file``), then answers every
request from the local client by sending the same request to the remote and returning its
answer unchanged; resource-update notifications and log messages flow back the other way. It
declares no tool itself: the remote's registry is the only source.

Before serving, one plain HTTP request checks the remote, so a server that is down, a wrong URL
or a refused key is reported on stderr in words, with exit status 1.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from fable_mcp.client_log import relay
from fable_mcp.identity import connection_of

__all__ = ["BridgeError", "check_remote", "read_api_key", "run_bridge"]

_log = logging.getLogger(__name__)
Ctx = ServerRequestContext[Any, Any]

# method: (request type, its params type, result type) — forwarded as they are.
_FORWARDED: dict[str, tuple[type[Any], type[Any], type[Any]]] = {
    "tools/list": (types.ListToolsRequest, types.PaginatedRequestParams, types.ListToolsResult),
    "tools/call": (types.CallToolRequest, types.CallToolRequestParams, types.CallToolResult),
    "resources/list": (types.ListResourcesRequest, types.PaginatedRequestParams, types.ListResourcesResult),
    "resources/templates/list": (types.ListResourceTemplatesRequest, types.PaginatedRequestParams,
                                 types.ListResourceTemplatesResult),
    "resources/read": (types.ReadResourceRequest, types.ReadResourceRequestParams, types.ReadResourceResult),
    "resources/subscribe": (types.SubscribeRequest, types.SubscribeRequestParams, types.EmptyResult),
    "resources/unsubscribe": (types.UnsubscribeRequest, types.UnsubscribeRequestParams, types.EmptyResult),
    "prompts/list": (types.ListPromptsRequest, types.PaginatedRequestParams, types.ListPromptsResult),
    "prompts/get": (types.GetPromptRequest, types.GetPromptRequestParams, types.GetPromptResult),
    "completion/complete": (types.CompleteRequest, types.CompleteRequestParams, types.CompleteResult),
    "logging/setLevel": (types.SetLevelRequest, types.SetLevelRequestParams, types.EmptyResult),
}


class BridgeError(Exception):
    """The bridge cannot start: no key, remote unreachable, key refused."""


def read_api_key(api_key_file: str | None) -> str:
    if api_key_file:
        try:
            key = Path(api_key_file).expanduser().read_text().strip()
        except OSError as e:
            raise BridgeError(f"cannot read the API key file {api_key_file!r}: {e.strerror}") from e
    else:
        key = os.environ.get("FABLE_API_KEY", "").strip()
    if not key:
        raise BridgeError("the remote bridge needs an API key: set FABLE_API_KEY or pass --api-key-file "
                          "(create one with `fable apikey create --user NAME` on the server)")
    return key


async def check_remote(http: httpx2.AsyncClient, url: str) -> None:
    """Fail with a clear message when the remote is down, not Fable, or refuses the key."""
    try:
        response = await http.get(url, headers={"accept": "text/event-stream"})
    except httpx2.HTTPError as e:
        raise BridgeError(f"cannot reach the remote Fable at {url}: {e}") from e
    if response.status_code == 401:
        raise BridgeError(f"the remote Fable at {url} refused the API key (401): check FABLE_API_KEY "
                          "or --api-key-file; keys look like fable_xxxxxxxx_...")
    if response.status_code == 404:
        raise BridgeError(f"no MCP endpoint at {url} (404): the URL should end in /mcp")
    if response.status_code >= 500:
        raise BridgeError(f"the remote Fable at {url} answered {response.status_code}; is it healthy?")


class Bridge:
    """A local server whose every handler is the same request, sent to the remote client."""

    def __init__(self, url: str, remote: Client) -> None:
        self.url = url
        self.remote = remote
        self.local: Connection | None = None
        self.server: Server[Any] = Server("fable-bridge", title="Fable (remote)",
                                          instructions=remote.session.instructions)
        for method, (request_type, params_type, result_type) in _FORWARDED.items():
            self.server.add_request_handler(method, params_type, self._forward(request_type, result_type))

    def _forward(self, request_type: type[Any], result_type: type[Any]) -> Callable[[Ctx, Any], Awaitable[Any]]:
        async def forward(ctx: Ctx, params: Any) -> Any:
            self.local = connection_of(ctx)
            try:
                return await self.remote.session.send_request(request_type(params=params), result_type)
            except MCPError:
                raise
            except Exception as e:
                _log.warning("remote call failed", exc_info=True)
                raise MCPError(types.INTERNAL_ERROR, f"the remote Fable at {self.url} failed: {e}") from e

        return forward

    async def on_remote_message(self, message: Any) -> None:
        """Pass resource updates and log messages from the remote on to the local client."""
        if self.local is None:
            return
        if isinstance(message, types.ResourceUpdatedNotification):
            await self.local.send_resource_updated(message.params.uri)
        elif isinstance(message, types.LoggingMessageNotification):
            await relay(self.local, message.params)


async def run_bridge(url: str, api_key_file: str | None = None) -> int:
    """Serve the remote Fable at ``url`` on stdin/stdout; 1 with a message if it cannot start."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="fable mcp: %(message)s")
    try:
        key = read_api_key(api_key_file)
        async with httpx2.AsyncClient(headers={"authorization": f"Bearer {key}"},
                                      timeout=httpx2.Timeout(30, read=300)) as http:
            await check_remote(http, url)
            await _serve(url, http)
    except BridgeError as e:
        print(f"fable mcp: {e}", file=sys.stderr)
        return 1
    return 0


async def _serve(url: str, http: httpx2.AsyncClient) -> None:
    bridge: Bridge | None = None

    async def on_message(message: Any) -> None:
        if bridge is not None:
            await bridge.on_remote_message(message)

    remote = Client(streamable_http_client(url, http_client=http), mode="legacy", message_handler=on_message)
    try:
        await remote.__aenter__()
    except Exception as e:
        raise BridgeError(f"the remote at {url} did not complete the MCP handshake: {e}") from e
    try:
        bridge = Bridge(url, remote)
        async with stdio_server() as (read_stream, write_stream):
            await bridge.server.run(read_stream, write_stream, bridge.server.create_initialization_options())
    finally:
        await remote.__aexit__(None, None, None)
