"""The hot path over HTTP: a 2026-07-28 ``tools/call`` that nothing can be streamed to.

The SDK serves every single-exchange (2026-07-28) request the same general way: a task group
and a memory stream in case the handler emits notifications, a per-request connection with its
exit stack, the middleware chain, and three validating passes over the result. For the request
that agents send most (a tool call that asked for neither progress nor log messages, so that
nothing but its one response can ever be written) that machinery is most of the server's time:
about 0.9 ms of the 2.3 ms a ``read_note`` costs.

:class:`DirectToolCalls` answers exactly those requests itself, and only when they pass the
checks the SDK would make, made with the SDK's own functions: transport security (Content-Type,
Host, Origin), the Accept header, the JSON-RPC envelope, the routing-header and ``_meta``
ladder (``classify_inbound_request``), ``Mcp-Param-*`` headers against the tool's input schema,
and the ``tools/call`` params surface. Anything else (another method, a notification, a batch,
a request that fails a check, an oversized or chunked body) goes to the SDK untouched, body
replayed, so every protocol error is still the SDK's own. The reply is the one the SDK would
send, field for field: ``tests/mcp/test_direct_calls.py`` compares the two paths.

A call that runs past the SDK's deferral window (15 s: a model download, a long import, a
row lock) is answered as the SDK answers it: the response commits to ``text/event-stream``,
a ``: ping`` comment goes out every window so a proxy's idle-read timeout cannot cut it, and
the result follows as one SSE event.

When an OpenTelemetry tracer provider is installed, every request goes to the SDK, whose
middleware records a span per request; Fable installs none, so by default there is nothing to
record. One difference is deliberate: the SDK cancels a streaming handler when the client disconnects;
here the call runs to its end, like any request whose response is a single JSON body.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server import (
    _streamable_http_modern as sdk_modern,  # its keepalive interval and SSE headers
)
from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import TransportSecurityMiddleware
from mcp.shared.inbound import (
    InboundModernRoute,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
)
from mcp_types import methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from opentelemetry import trace
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fable_core.caller import Caller
from fable_mcp import tools
from fable_mcp.client_log import ClientLog
from fable_mcp.identity import CALLER_SCOPE_KEY
from fable_mcp.server import FableMcp

__all__ = ["DirectToolCalls"]

_log = logging.getLogger(__name__)

_METHOD = "tools/call"
_VERSION_HEADER = b"mcp-protocol-version"
_MODERN = frozenset(v.encode("latin-1") for v in MODERN_PROTOCOL_VERSIONS)
# _meta keys that open a channel back to the client on this request's stream.
_STREAMING_META = frozenset({"progressToken", types.LOG_LEVEL_META_KEY})


class DirectToolCalls:
    """ASGI wrapper in front of the SDK's streamable-HTTP app (see the module docstring).

    It runs after :class:`~fable_mcp.auth.RequireCaller`, so the caller is in the scope.
    """

    def __init__(self, sdk_app: ASGIApp, mcp: FableMcp, security: TransportSecurityMiddleware,
                 max_body: int) -> None:
        self.sdk_app = sdk_app
        self.mcp = mcp
        self.server: Server[Any] = mcp.server
        self.security = security
        self.max_body = max_body
        self.answered = 0  # calls served here rather than by the SDK
        if _METHOD in self.server.cache_hints:
            raise ValueError("tools/call has a cache hint: the direct path does not apply one")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        length = _eligible_length(scope, self.max_body)
        if length is None or _tracing():
            await self.sdk_app(scope, receive, send)
            return
        messages = await _read(receive, length)
        body = _whole_body(messages, length)
        if body is None or not await self._answer(scope, body, send):
            await self.sdk_app(scope, _replay(messages, receive), send)

    async def _answer(self, scope: Scope, body: bytes, send: Send) -> bool:
        """Serve the call and return True, or return False (nothing sent) to leave it to the SDK."""
        request = Request(scope)
        if await self.security.validate_request(request, is_post=True) is not None:
            return False
        has_json, has_sse = check_accept_headers(request)
        if not (has_json and has_sse):
            return False
        try:
            decoded = json.loads(body)
        except (ValueError, RecursionError):
            return False
        if not _is_quiet_tool_call(decoded):
            return False
        try:
            request_id = types.JSONRPCRequest.model_validate(decoded).id
        except ValidationError:
            return False
        if find_duplicated_routing_header(request.headers.items()) is not None:
            return False
        route = classify_inbound_request(decoded, headers=dict(request.headers))
        if not isinstance(route, InboundModernRoute):
            return False
        params: dict[str, Any] = decoded["params"]
        try:  # the params surface the SDK checks; it guarantees a string name and object arguments
            methods.validate_client_request(_METHOD, route.protocol_version, params)
        except (ValidationError, KeyError, ValueError):
            return False
        name: str = params["name"]
        arguments: dict[str, Any] = params.get("arguments") or {}
        schema = self.mcp.input_schema(name)
        if schema is not None and validate_mcp_param_headers(schema, arguments, request.headers) is not None:
            return False
        caller = scope.get(CALLER_SCOPE_KEY)
        if not isinstance(caller, Caller):
            return False
        keepalive = _KeepAlive(send)
        try:
            outcome = await tools.call_tool(self.mcp.fable, caller, name, arguments, ClientLog.silent())
        finally:
            streaming = await keepalive.stop()
        result = outcome.model_dump(by_alias=True, mode="json", exclude_none=True)
        result.setdefault("resultType", "complete")
        result["_meta"] = {**result.get("_meta", {}), types.SERVER_INFO_META_KEY: self.server.server_info_stamp}
        reply = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}, separators=(",", ":"))
        if streaming:
            event = f"event: message\r\ndata: {reply}\r\n\r\n".encode()
            await send({"type": "http.response.body", "body": event, "more_body": False})
        else:
            await _send_json(send, reply.encode())
        self.answered += 1
        return True


class _KeepAlive:
    """What the SDK does for a call that stays silent past its deferral window: commit the
    response to ``text/event-stream`` and send a comment line every window until the result.

    A timer, not a task, until the window passes: a call that ends sooner (nearly all of them)
    pays for one ``call_later``.
    """

    def __init__(self, send: Send) -> None:
        self.send = send
        self.interval: float = sdk_modern._SSE_PING_INTERVAL  # read per call: tests shorten it
        self.done = asyncio.Event()
        self.pinging: asyncio.Task[None] | None = None
        self.timer = asyncio.get_running_loop().call_later(self.interval, self._start)

    def _start(self) -> None:
        self.pinging = asyncio.ensure_future(self._ping())

    async def _ping(self) -> None:
        await self.send({"type": "http.response.start", "status": 200, "headers": sdk_modern._SSE_HEADERS})
        while not self.done.is_set():
            await self.send({"type": "http.response.body", "body": b": ping\r\n\r\n", "more_body": True})
            try:
                await asyncio.wait_for(self.done.wait(), self.interval)
            except TimeoutError:
                pass

    async def stop(self) -> bool:
        """End the pings; True if the response already is an event stream."""
        self.timer.cancel()
        if self.pinging is None:
            return False
        self.done.set()
        await self.pinging
        return True


def _tracing() -> bool:
    """Whether someone installed a tracer provider (the default is a no-op proxy)."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def _eligible_length(scope: Scope, max_body: int) -> int | None:
    """The body length of a POST at a 2026-07-28 version with a Content-Length within bounds."""
    if scope["type"] != "http" or scope["method"] != "POST":
        return None
    version = length = None
    for name, value in scope["headers"]:
        if name == _VERSION_HEADER:
            version = value
        elif name == b"content-length":
            length = value
    if version not in _MODERN or length is None or not length.isdigit():
        return None
    size = int(length)
    return size if size <= max_body else None


async def _read(receive: Receive, length: int) -> list[Message]:
    """The messages that carry the body, stopping early once more arrived than announced."""
    messages: list[Message] = []
    received = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages
        received += len(message.get("body", b""))
        if received > length or not message.get("more_body", False):
            return messages


def _whole_body(messages: list[Message], length: int) -> bytes | None:
    """The body, if the messages hold all of it and exactly what Content-Length announced."""
    if messages[-1]["type"] != "http.request" or messages[-1].get("more_body", False):
        return None
    body = b"".join(m.get("body", b"") for m in messages)
    return body if len(body) == length else None


def _is_quiet_tool_call(decoded: Any) -> bool:
    """A tools/call request whose ``_meta`` asks for nothing to be streamed back."""
    if not (isinstance(decoded, dict) and decoded.get("method") == _METHOD and "id" in decoded):
        return False
    params = decoded.get("params")
    if not isinstance(params, dict):
        return False
    meta = params.get("_meta")
    return isinstance(meta, dict) and not (_STREAMING_META & meta.keys())


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A ``receive`` that hands the SDK the messages already read, then the client's next ones."""
    pending = list(reversed(messages))

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed


async def _send_json(send: Send, body: bytes) -> None:
    """A 200 with the headers the SDK's ``Response(..., media_type="application/json")`` sends."""
    await send({"type": "http.response.start", "status": 200, "headers": [
        (b"content-length", str(len(body)).encode()), (b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})
