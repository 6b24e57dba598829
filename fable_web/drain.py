"""Graceful shutdown: what ``fable serve`` does between SIGTERM and exit.

uvicorn, told to stop, closes its listening sockets and its idle connections, waits for the
requests in progress, then runs the app's shutdown. Left at that, an event stream that never
ends by itself (an MCP ``subscriptions/listen`` stream or 2025 GET stream, a REST ``GET``
stream following a generation) keeps the process up for as long as its client (or a proxy that
keeps connections) stays. :class:`Drain`, the outermost layer of the app, makes the difference:

- once draining, a request that still arrives (on a kept connection) is answered 503 with
  ``Retry-After`` and ``Connection: close``: the load balancer sends it to another replica;
- held streams end at once: each gets a last frame, ``retry:`` (the reconnect hint, in
  milliseconds; an SSE client reconnects, and resumes with ``Last-Event-ID`` where the stream
  has ids), and is closed. A held stream is an event stream answering a ``GET`` or an MCP
  ``subscriptions/listen`` request. MCP listen streams are first asked to close the spec's way
  (their final result: the client re-listens); what is still open :data:`GRACE` seconds later is cut;
- everything else in flight (a tool call, a POST answered as a stream of progress) runs to its
  end, within ``FABLE_SHUTDOWN_TIMEOUT`` (uvicorn's ``timeout_graceful_shutdown``), after which
  uvicorn cancels what is left. A call cut so gets its surface's error, not uvicorn's bare 500
  and a traceback: 503 with ``Retry-After`` and the REST error body, or over MCP a JSON-RPC
  error for its request id (as the response, or as the last event of a stream already begun).
  Then the app shuts down and :meth:`Fable.close` runs: unfinished
  generations are marked interrupted, running jobs are cancelled without recording their due
  time (so another replica runs them; :mod:`fable_core.tools.jobs`).

:class:`DrainingServer` is the uvicorn server that starts the drain when it is told to stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
from collections.abc import Callable, Sequence
from typing import Any

import uvicorn
from sse_starlette.sse import AppStatus
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["RETRY_MS", "Drain", "DrainingServer"]

RETRY_MS = 1000  # the reconnect hint a held stream ends with
GRACE = 0.2  # seconds held streams have to end gracefully before they are cut
_LISTEN = b"subscriptions/listen"
_KEEP = 65_536  # bytes of an MCP request's body kept to name its id when the call is cut
_log = logging.getLogger(__name__)


class Drain:
    """The ASGI layer that refuses new requests and ends held streams once :meth:`start` is called."""

    def __init__(self, app: ASGIApp, *, retry_ms: int = RETRY_MS, grace: float = GRACE,
                 on_drain: Sequence[Callable[[], None]] = ()) -> None:
        self.app = app
        self.draining = asyncio.Event()
        self.cutting = asyncio.Event()
        self.grace = grace
        self.on_drain = list(on_drain)
        self._last = f"retry: {retry_ms}\n\n".encode()

    async def start(self) -> None:
        """Refuse new requests, ask what can end a stream gracefully to do so (MCP listen streams
        send their final result), and cut the held streams still open :data:`GRACE` seconds later."""
        self.draining.set()
        for hook in self.on_drain:
            try:
                hook()
            except Exception:  # noqa: BLE001 - one hook failing must not keep the process up
                _log.exception("a drain hook failed")
        await asyncio.sleep(self.grace)
        self.cutting.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.draining.is_set():
            await _refuse(send)
            return
        stream = _Stream(self, asyncio.current_task(), held=scope["method"] == "GET", mcp=scope["path"] == "/mcp")
        try:
            await self.app(scope, stream.receive(receive), stream.send(send))
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is None or task.cancelling() > 1 or not (stream.cut or self.draining.is_set()):
                raise
            task.uncancel()  # our cut or the drain deadline's, not the process dying: answer and end
            with contextlib.suppress(OSError, RuntimeError):
                if stream.cut:  # a held stream: its reconnect hint
                    await send({"type": "http.response.body", "body": self._last, "more_body": False})
                else:
                    _log.info("cut at the shutdown deadline: %s %s", scope["method"], scope["path"])
                    await stream.cut_short(send)
        finally:
            stream.stop()


class _Stream:
    """One request's watch: whether its response is a held event stream, and cutting it."""

    def __init__(self, drain: Drain, task: asyncio.Task[object] | None, *, held: bool, mcp: bool) -> None:
        self.drain = drain
        self.task = task
        self.held = held
        self.mcp = mcp
        self.cut = False
        self.started: Message | None = None  # the response's start, once sent
        self.body = b""  # an MCP request's body, as far as it came (its JSON-RPC id, if cut)
        self._watch: asyncio.Task[None] | None = None

    def receive(self, receive: Receive) -> Receive:
        if not self.mcp:
            return receive

        async def receiving() -> Message:
            message = await receive()
            if len(self.body) < _KEEP:
                self.body += message.get("body", b"")[:_KEEP]
            if not self.held and _LISTEN in message.get("body", b""):
                self.held = True  # an MCP listen request: its answer is a stream that never ends
            return message

        return receiving

    def send(self, send: Send) -> Send:
        async def sending(message: Message) -> None:
            if self.cut:
                return  # the stream was ended for the shutdown: the app's last words go nowhere
            if message["type"] == "http.response.start":
                self.started = message
                if self.held and _is_stream(message):
                    self._watch = asyncio.create_task(self._cut_on_drain())
            await send(message)

        return sending

    async def cut_short(self, send: Send) -> None:
        """End a call the drain deadline cut, in its surface's error shape."""
        if self.mcp:
            error = json.dumps({"jsonrpc": "2.0", "id": _request_id(self.body), "error": {
                "code": -32000, "message": "the server is shutting down; send the request again"}}).encode()
            if self.started is None:
                await _answer(send, error)
            elif _is_stream(self.started):
                await send({"type": "http.response.body", "body": b"event: message\ndata: " + error + b"\n\n",
                            "more_body": False})
            else:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        elif self.started is None:
            await _refuse(send)
        else:  # a REST stream begun: its end is all that can still be said
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _cut_on_drain(self) -> None:
        await self.drain.cutting.wait()
        if self.task is not None and not self.task.done():
            self.cut = True
            self.task.cancel()

    def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()


def _is_stream(message: Message) -> bool:
    return any(name.lower() == b"content-type" and value.startswith(b"text/event-stream")
               for name, value in message.get("headers", ()))


def _request_id(body: bytes) -> Any:
    try:
        request = json.loads(body)
    except ValueError:
        return None
    return request.get("id") if isinstance(request, dict) else None


async def _refuse(send: Send) -> None:
    await _answer(send, b'{"error":{"type":"unavailable","message":"this server is shutting down; try again",'
                        b'"details":{}}}')


async def _answer(send: Send, body: bytes) -> None:
    """503 with ``body`` (JSON), ``Retry-After`` and the connection closed."""
    await send({"type": "http.response.start", "status": 503, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"retry-after", b"1"), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class DrainingServer(uvicorn.Server):
    """uvicorn's server, starting ``drain`` first when told to stop (SIGTERM, SIGINT)."""

    def __init__(self, config: uvicorn.Config, drain: Drain) -> None:
        super().__init__(config)
        self.drain = drain
        # sse-starlette (the MCP SDK's event streams) ends every stream of its own within 0.5 s
        # of a SIGTERM, without the reconnect hint, racing the drain, and cuts a tool call's
        # progress stream that should run to its end: the drain alone decides what ends when.
        AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        _log.info("draining: ending held streams, finishing requests in progress")
        await self.drain.start()
        await super().shutdown(sockets)
