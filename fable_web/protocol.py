"""uvicorn's httptools protocol with a deadline for the request line and headers.

uvicorn only times out the idle gap *between* requests (``timeout_keep_alive``): a client that
connects and then sends nothing, or one header byte every few seconds (slowloris), holds its
connection forever. Here a connection must finish a request's line and headers within
``header_timeout`` seconds of connecting, or of the first byte of its next request on a kept-alive
connection; otherwise it gets ``408 Request Timeout`` (when nothing of a response is on the wire
yet) and is closed. The body has its own deadline, in the app (:mod:`fable_web.timeouts`).

This leans on uvicorn internals (checked against uvicorn 0.55; check again on upgrade):
``HttpToolsProtocol`` and its callbacks ``connection_made``, ``on_message_begin`` (the parser
calls it on the first byte of each request), ``on_headers_complete`` and ``connection_lost``;
its attributes ``loop``, ``transport``, ``cycle`` (``None`` until a first request, then its
``RequestResponseCycle`` with ``response_complete``) and ``server_state.default_headers``.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["HeaderTimeoutProtocol"]

_BODY = b"Request header timeout"
_HEAD = (
    b"content-type: text/plain; charset=utf-8\r\n"
    b"content-length: " + str(len(_BODY)).encode() + b"\r\n"
    b"connection: close\r\n\r\n"
)


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """Closes connections whose request line and headers take over ``header_timeout`` seconds.

    Give uvicorn a subclass bound to a timeout: ``uvicorn.Config(app, http=
    HeaderTimeoutProtocol.with_timeout(10.0))``. A timer per connection costs one ``call_later``
    per request, armed and cancelled in the event loop (no task).
    """

    header_timeout: ClassVar[float] = 10.0
    _header_timer: asyncio.TimerHandle | None = None

    @classmethod
    def with_timeout(cls, header_timeout: float) -> type[HeaderTimeoutProtocol]:
        """This protocol with its deadline set: uvicorn builds protocols from a class alone."""
        return type(cls.__name__, (cls,), {"header_timeout": header_timeout})

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._header_timer is None:  # on a new connection, the deadline runs from connecting
            self._arm_header_timer()

    def on_headers_complete(self) -> None:
        self._cancel_header_timer()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        """408 unless an earlier request's response is still going out (then a 408 would
        corrupt it), and close either way."""
        self._header_timer = None
        if self.transport.is_closing():
            return
        if self.cycle is None or self.cycle.response_complete:
            defaults = b"".join(name + b": " + value + b"\r\n"
                                for name, value in self.server_state.default_headers)
            self.transport.write(b"HTTP/1.1 408 Request Timeout\r\n" + defaults + _HEAD + _BODY)
        self.transport.close()
