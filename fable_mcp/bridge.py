"""``fable mcp --remote URL``: a local stdio server that forwards to a remote Fable's ``/mcp``.

Claude Desktop on a laptop speaks stdio; Fable runs on a home server. The bridge connects to
the remote with the API key (``FABLE_API_KEY`` or ``--api-key-file``), then answers every
request from the local client by sending the same request to the remote and returning its
answer unchanged; resource-update notifications and log messages flow back the other way. It
declares no tool itself: the remote's registry is the only source.

Before serving, one plain HTTP request checks the remote, so a server that is down, a wrong URL
or a refused key is reported on stderr in words, with exit status 1.

While serving, the remote may go away (a restart, a laptop changing networks). The SDK client
runs in a task of its own (:class:`RemoteSession`), so its transport dying ends that task, not
the bridge: a request in flight gets an error at once, saying why (the same check as at start:
unreachable, key refused, ...), and the next request opens a new session, subscriptions and
log level restored. A remote that restarted has forgotten the session: the request it refused
is sent again on a new one (it never ran). A call that was in flight when the connection was
lost is never repeated, since it may have run.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import anyio
import httpx2
import mcp_types as types
from anyio.abc import TaskGroup, TaskStatus
from mcp import Client
from mcp.client.session import MessageHandlerFnT
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp.shared.exceptions import MCPError

from fable_mcp.client_log import relay
from fable_mcp.identity import connection_of
from fable_mcp.stdio import SignalExit

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


_CHECK_TIMEOUT = httpx2.Timeout(10)  # a host gives up on a silent server long before the 300 s a call may take


async def check_remote(http: httpx2.AsyncClient, url: str) -> None:
    """Fail with a clear message when the remote is down, not Fable, or refuses the key."""
    try:
        response = await http.get(url, headers={"accept": "text/event-stream"}, timeout=_CHECK_TIMEOUT)
    except httpx2.HTTPError as e:
        reason = str(e) or type(e).__name__  # a timeout's message is empty
        raise BridgeError(f"cannot reach the remote Fable at {url}: {reason}") from e
    if response.status_code == 401:
        raise BridgeError(f"the remote Fable at {url} refused the API key (401): check FABLE_API_KEY "
                          "or --api-key-file; keys look like fable_xxxxxxxx_...")
    if response.status_code == 404:
        raise BridgeError(f"no MCP endpoint at {url} (404): the URL should end in /mcp")
    if response.is_redirect:
        raise BridgeError(f"{url} redirects to {urljoin(url, response.headers.get('location', ''))}: use that URL")
    if response.headers.get("content-type", "").startswith("text/html"):
        raise BridgeError(f"{url} answered with a web page, not MCP: the URL should end in /mcp")
    if response.status_code >= 500:
        raise BridgeError(f"the remote Fable at {url} answered {response.status_code}; is it healthy?")


_LOST = "the connection to the remote Fable at {url} was lost during this request ({why}); it may or may not have run"


class RemoteSession:
    """The MCP session with the remote, opened on first use and opened again once lost.

    Each session's SDK client lives in a task of the bridge's task group: when its transport
    fails, that task ends and cancels the requests waiting on it, which then report why.
    """

    def __init__(self, url: str, http: httpx2.AsyncClient, tasks: TaskGroup,
                 on_message: MessageHandlerFnT) -> None:
        self.url = url
        self.http = http
        self.tasks = tasks
        self.on_message = on_message
        self.subscribed: set[str] = set()  # restored on each new session
        self.log_level: types.LoggingLevel | None = None
        self._current: _Session | None = None
        self._opening = anyio.Lock()

    async def instructions(self) -> str | None:
        return (await self._session()).client.session.instructions

    async def send(self, request: Any, result_type: type[Any]) -> Any:
        for attempt in (1, 2):
            session = await self._session()
            try:
                return await session.send(request, result_type)
            except MCPError as e:
                if attempt == 1 and _session_unknown(e):  # the remote restarted: refused, never run
                    session.end()
                    continue
                if _transport_failed(e):
                    raise MCPError(types.INTERNAL_ERROR, await self._failed(e.error.message)) from e
                if e.error.code == types.CONNECTION_CLOSED:  # the SDK's answer to a request its transport lost
                    raise MCPError(types.INTERNAL_ERROR, await self._lost()) from e
                raise
            except _Lost as e:
                raise MCPError(types.INTERNAL_ERROR, await self._lost()) from e
        raise AssertionError("unreachable")  # pragma: no cover

    async def _session(self) -> _Session:
        async with self._opening:
            if self._current is None or not self._current.alive:
                try:
                    self._current = await self.tasks.start(self._hold)
                except Exception as e:  # whatever stopped the handshake, said in words
                    _log.warning("cannot open a session with the remote Fable at %s: %r", self.url, e)
                    raise MCPError(types.INTERNAL_ERROR, await self._failed(str(e))) from e
                await self._restore(self._current)
            return self._current

    async def _hold(self, *, task_status: TaskStatus[_Session]) -> None:
        client = Client(streamable_http_client(self.url, http_client=self.http), mode="legacy",
                        message_handler=self.on_message)
        session: _Session | None = None
        try:
            async with client:
                session = _Session(client)
                task_status.started(session)
                await session.ended.wait()
        except Exception as e:
            if session is None:
                raise  # the handshake failed: tasks.start() hands it to the request that waited
            _log.warning("lost the session with the remote Fable at %s: %r", self.url, e)  # the next request opens one
        finally:
            if session is not None:
                session.fail()

    async def _restore(self, session: _Session) -> None:
        """A new session starts with what the local client asked of the old one."""
        for uri in sorted(self.subscribed):
            await session.send(types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri)), types.EmptyResult)
        if self.log_level is not None:
            await session.send(types.SetLevelRequest(params=types.SetLevelRequestParams(level=self.log_level)),
                               types.EmptyResult)

    async def _diagnosis(self, if_fine: str) -> str:
        """What is wrong with the remote, in words (the start check again); ``if_fine`` when
        the remote looks fine now."""
        try:
            await check_remote(self.http, self.url)
        except BridgeError as e:
            return str(e)
        return if_fine

    async def _lost(self) -> str:
        why = await self._diagnosis("the remote is reachable again")
        return _LOST.format(url=self.url, why=why)

    async def _failed(self, reason: str) -> str:
        return await self._diagnosis(f"the remote Fable at {self.url} failed: {reason}")

    async def close(self) -> None:
        if self._current is not None:
            self._current.end()


class _Lost(Exception):
    """The session's transport died while a request waited on it."""


class _Session:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.ended = anyio.Event()
        self.alive = True
        self._waiting: set[anyio.CancelScope] = set()

    async def send(self, request: Any, result_type: type[Any]) -> Any:
        if not self.alive:
            raise _Lost
        with anyio.CancelScope() as scope:
            self._waiting.add(scope)
            try:
                return await self.client.session.send_request(request, result_type)
            finally:
                self._waiting.discard(scope)
        raise _Lost

    def end(self) -> None:
        self.alive = False
        self.ended.set()

    def fail(self) -> None:
        self.end()
        for scope in self._waiting:
            scope.cancel()


def _session_unknown(error: MCPError) -> bool:
    return error.error.code == types.INVALID_REQUEST and error.error.message.lower() in {
        "session not found", "session terminated"}


def _transport_failed(error: MCPError) -> bool:
    """The SDK client's stand-in for an HTTP error it could not read as JSON-RPC (a 401, a 502)."""
    return error.error.code == types.INTERNAL_ERROR and error.error.message == "Server returned an error response"


class Bridge:
    """A local server whose every handler is the same request, sent to the remote."""

    def __init__(self, url: str, remote: RemoteSession, instructions: str | None) -> None:
        self.url = url
        self.remote = remote
        self.local: Connection | None = None
        self.server: Server[Any] = Server("fable-bridge", title="Fable (remote)", instructions=instructions)
        for method, (request_type, params_type, result_type) in _FORWARDED.items():
            self.server.add_request_handler(method, params_type, self._forward(request_type, result_type))
        self.subscribed_locally = False  # a 2025 client used resources/subscribe
        self.updates = InMemorySubscriptionBus()  # the remote's resource updates, for 2026 listen streams
        self._listen_handler = ListenHandler(self.updates)
        self.server.add_request_handler("subscriptions/listen", types.SubscriptionsListenRequestParams, self._listen)

    async def _listen(self, ctx: Ctx, params: types.SubscriptionsListenRequestParams
                      ) -> types.SubscriptionsListenResult:
        """A 2026-era client's listen stream, served here from the remote session's updates: the
        remote session is subscribed to each URI the stream asks for (and stays so: an update
        no stream wants is dropped here)."""
        for uri in params.notifications.resource_subscriptions or ():
            await self.remote.send(types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri)),
                                   types.EmptyResult)
            self.remote.subscribed.add(str(uri))
        return await self._listen_handler(ctx, params)

    def _forward(self, request_type: type[Any], result_type: type[Any]) -> Callable[[Ctx, Any], Awaitable[Any]]:
        async def forward(ctx: Ctx, params: Any) -> Any:
            self.local = connection_of(ctx)
            try:
                result = await self.remote.send(request_type(params=params), result_type)
            except MCPError:
                raise
            except Exception as e:
                _log.warning("remote call failed", exc_info=True)
                raise MCPError(types.INTERNAL_ERROR, f"the remote Fable at {self.url} failed: {e}") from e
            self._remember(params)
            return result

        return forward

    def _remember(self, params: Any) -> None:
        """What a new session must be told again: subscriptions and the log level."""
        if isinstance(params, types.SubscribeRequestParams):
            self.remote.subscribed.add(str(params.uri))
            self.subscribed_locally = True
        elif isinstance(params, types.UnsubscribeRequestParams):
            self.remote.subscribed.discard(str(params.uri))
        elif isinstance(params, types.SetLevelRequestParams):
            self.remote.log_level = params.level

    async def on_remote_message(self, message: Any) -> None:
        """Pass resource updates and log messages from the remote on to the local client."""
        if isinstance(message, types.ResourceUpdatedNotification):
            await self.updates.publish(ResourceUpdated(uri=str(message.params.uri)))
        if self.local is None:
            return
        if isinstance(message, types.ResourceUpdatedNotification):
            if self.subscribed_locally:
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

    async with anyio.create_task_group() as tasks:
        remote = RemoteSession(url, http, tasks, on_message)
        try:
            instructions = await remote.instructions()
        except MCPError as e:
            raise BridgeError(f"the remote at {url} did not complete the MCP handshake: {e.error.message}") from e
        bridge = Bridge(url, remote, instructions)
        exits = SignalExit()
        try:
            async with stdio_server() as (read_stream, write_stream):
                await bridge.server.run(read_stream, write_stream, bridge.server.create_initialization_options())
        finally:
            await exits.settled()
            await remote.close()
