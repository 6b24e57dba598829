"""Load shedding: a replica works on at most so many requests at once and refuses the rest at once.

Requests past what a process can serve do not make it serve more: they queue, and every
request's latency grows with the queue (200 MCP clients on one 2-core replica: p99 23 s, less
done than with 50). So :class:`Shed` counts the requests in progress and answers one that
arrives beyond :func:`~fable_core.config.request_limit` at once — ``503`` with ``Retry-After``, the REST error body
(type ``busy``), or over MCP a JSON-RPC error — having done nothing: a client (or the load
balancer) retries it, here a second later or on another replica. What is admitted keeps the
latency of a full, not an overloaded, process.

Counted: the API (``/api/…``), MCP (``/mcp``) and OAuth's wire routes (``/oauth/…``). Not
counted: health (a balancer must see a busy replica as up), CORS preflights and the UI's files.
A held stream (an answer followed, the MCP 2025 ``GET`` stream, an MCP ``subscriptions/listen``)
is admitted as any request and gives its place back as its stream starts: a stream waits, it
does not work, so one already running is never affected by load. Whether a request is a stream
is judged by the response, never by what the request's headers claim (an ``Accept`` header
would otherwise let any call past the limit).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["RETRY_AFTER", "Load", "Shed"]

RETRY_AFTER = 1  # seconds a refused client is asked to wait
_COUNTED = ("/api/", "/oauth/")
_EXEMPT = frozenset({"/api/health"})
_LISTEN = b"subscriptions/listen"
_RETRY = (b"retry-after", str(RETRY_AFTER).encode())
_SAY_EVERY = 60.0  # seconds between log lines about refused requests
_log = logging.getLogger(__name__)


@dataclass
class Load:
    """What :class:`Shed` sees, shared with health: the limit, the requests in progress, and how
    many were refused since the process started."""

    limit: int
    busy: int = 0
    refused: int = 0
    _said_at: float = 0.0
    _said_refused: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"in_progress": self.busy, "limit": self.limit, "refused": self.refused}

    def say(self) -> None:
        """Log the refusals, one line a minute at most (a flood of them is one line, with its count)."""
        now = time.monotonic()
        if now - self._said_at >= _SAY_EVERY:
            _log.warning("busy: refused %d requests (%d in progress is this process's limit, FABLE_MAX_REQUESTS)",
                         self.refused - self._said_refused, self.limit)
            self._said_at, self._said_refused = now, self.refused


class Shed:
    """The ASGI layer that refuses requests beyond ``load.limit`` in progress; see the module docstring."""

    def __init__(self, app: ASGIApp, *, load: Load) -> None:
        self.app = app
        self.load = load

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _counted(scope):
            await self.app(scope, receive, send)
            return
        load = self.load
        if load.busy >= load.limit:
            load.refused += 1
            load.say()
            await _refuse(send, mcp=scope["path"] == "/mcp", limit=load.limit)
            return
        load.busy += 1
        place = _Place(load, scope["method"])
        try:
            await self.app(scope, place.receive(receive, mcp=scope["path"] == "/mcp"), place.send(send))
        finally:
            place.give_back()


class _Place:
    """One admitted request's place, given back when it ends or its answer becomes a held stream."""

    def __init__(self, load: Load, method: str) -> None:
        self.load = load
        self.method = method
        self.held = False  # an MCP listen request (its body said so)
        self.given = False

    def give_back(self) -> None:
        if not self.given:
            self.given = True
            self.load.busy -= 1

    def receive(self, receive: Receive, *, mcp: bool) -> Receive:
        if not mcp:
            return receive

        async def receiving() -> Message:
            message = await receive()
            if _LISTEN in message.get("body", b""):
                self.held = True  # an MCP listen request: its answer is a stream that waits
            return message

        return receiving

    def send(self, send: Send) -> Send:
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                if (self.held or self.method == "GET") and _is_stream(message):
                    self.give_back()
                if message["status"] == 503 and not any(name.lower() == b"retry-after"
                                                         for name, _ in message.get("headers", ())):
                    # a 503 of another layer's (the MCP SDK's session limit, a database that is down)
                    message = {**message, "headers": [*message.get("headers", ()), _RETRY]}
            await send(message)

        return sending


def _counted(scope: Scope) -> bool:
    path: str = scope["path"]
    if path in _EXEMPT or not (path == "/mcp" or path.startswith(_COUNTED)):
        return False
    method: str = scope["method"]
    return method != "OPTIONS"  # a CORS preflight: no work


def _is_stream(message: Message) -> bool:
    return any(name.lower() == b"content-type" and value.startswith(b"text/event-stream")
               for name, value in message.get("headers", ()))


async def _refuse(send: Send, *, mcp: bool, limit: int) -> None:
    message = f"Fable is busy ({limit} requests in progress here); nothing was done: try again in {RETRY_AFTER} s"
    if mcp:  # the request's id is not read (that would be work): JSON-RPC's null id, which clients match
        body = {"jsonrpc": "2.0", "id": None,
                "error": {"code": -32000, "message": message, "data": {"type": "busy", "retry_after": RETRY_AFTER}}}
    else:
        body = {"error": {"type": "busy", "message": message, "details": {"retry_after": RETRY_AFTER}}}
    raw = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": 503, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode()),
        (b"retry-after", str(RETRY_AFTER).encode())]})
    await send({"type": "http.response.body", "body": raw})
