"""A deadline for request bodies: a client that stops sending mid-body gets 408, not a held task.

uvicorn hands the app body chunks as they arrive and waits for the next one forever, so a
``Content-Length: 100`` request that sends 10 bytes holds its connection and its task for good.
Here, while the body is incomplete, each ``receive()`` waits at most ``body_timeout`` seconds and
the whole body at most ``body_total_timeout`` (four times ``body_timeout`` unless given). On
expiry the middleware itself answers ``408 request_timeout`` (if no response has started) with
``Connection: close``, and the app's pending ``receive()`` returns ``http.disconnect``: to the app
the client has gone, which every handler already copes with, and whatever it sends afterwards is
dropped.

Once the body is complete, ``receive()`` passes straight through: streaming responses (SSE) call
it to wait for ``http.disconnect`` for minutes, which must not time out. Requests without a body
(no ``Content-Length`` or a zero one, no ``Transfer-Encoding``) are not wrapped at all.

A response that starts before the body is complete (a 401 or 413 that never reads it) goes out
with ``Connection: close``: otherwise the rest of the body, which no one reads, could trickle in
for ever on a kept-alive connection. The request line and headers have their own deadline, in
the protocol (:mod:`fable_web.protocol`).
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fable_web.errors import RequestTimeout, error_response

__all__ = ["BodyTimeoutMiddleware"]

_CLOSE = (b"connection", b"close")
_DISCONNECT: Message = {"type": "http.disconnect"}


def _has_body(scope: Scope) -> bool:
    headers: list[tuple[bytes, bytes]] = scope["headers"]
    for name, value in headers:
        if name == b"content-length":
            return value != b"0"
        if name == b"transfer-encoding":
            return True
    return False


class BodyTimeoutMiddleware:
    """Bounds how long the app waits for the request body; see the module docstring."""

    def __init__(self, app: ASGIApp, body_timeout: float = 30.0,
                 body_total_timeout: float | None = None) -> None:
        self.app = app
        self.body_timeout = body_timeout
        self.body_total_timeout = body_total_timeout or 4 * body_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _has_body(scope):
            await self.app(scope, receive, send)
            return
        await _BodyDeadline(self, scope, receive, send).run()


class _BodyDeadline:
    """One request's state: whether its body is complete, its response started, its time up."""

    def __init__(self, limits: BodyTimeoutMiddleware, scope: Scope, receive: Receive,
                 send: Send) -> None:
        self.limits = limits
        self.scope = scope
        self._receive = receive
        self._send = send
        self.body_complete = False
        self.started = False
        self.timed_out = False
        self.deadline = asyncio.get_running_loop().time() + limits.body_total_timeout

    async def run(self) -> None:
        await self.limits.app(self.scope, self.receive, self.send)

    async def receive(self) -> Message:
        if self.body_complete:
            return await self._receive()
        if self.timed_out:
            return _DISCONNECT
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout_at(min(loop.time() + self.limits.body_timeout, self.deadline)):
                message = await self._receive()
        except TimeoutError:
            await self._answer_timeout()
            return _DISCONNECT
        if message["type"] != "http.request" or not message.get("more_body", False):
            self.body_complete = True
        return message

    async def send(self, message: Message) -> None:
        if self.timed_out:
            return
        if message["type"] == "http.response.start":
            self.started = True
            if not self.body_complete:
                message = {**message, "headers": [*message.get("headers", []), _CLOSE]}
        await self._send(message)

    async def _answer_timeout(self) -> None:
        """408 while nothing is on the wire; else the app's stream is cut short and uvicorn
        closes the connection when the app returns without finishing its response."""
        self.timed_out = True
        if self.started:
            return
        err = RequestTimeout(f"the request body stalled: no data for {self.limits.body_timeout:g} s "
                             f"or not complete within {self.limits.body_total_timeout:g} s")
        response = error_response(err, headers={"connection": "close"})
        await response(self.scope, self._receive, self._send)
