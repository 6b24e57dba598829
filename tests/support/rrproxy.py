"""A round-robin HTTP load balancer for tests: each request goes to the next upstream, whatever
connection it came on, as a plain load balancer without stickiness does.

It forwards method, path, query, headers (hop-by-hop ones dropped) and body, streamed both ways,
so SSE and MCP streams pass through as they are written. An upstream that refuses the connection
(stopped, killed) is skipped for that request, the way a load balancer's passive health check
does; a request no upstream takes gets 502. ``served`` records which upstream answered each
request, for tests that must show a request crossed replicas. Run it with
:func:`support.servers.serve_in_thread` so it keeps answering while the test's loop waits.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

__all__ = ["RoundRobin"]

_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                         "trailer", "transfer-encoding", "upgrade", "content-length"})


@dataclass
class RoundRobin:
    """An ASGI app forwarding each request to the next of ``upstreams`` (base URLs)."""

    upstreams: list[str]
    served: list[tuple[str, str, int]] = field(default_factory=list)  # (method, path, upstream index)
    down: set[int] = field(default_factory=set)  # upstreams taken out by the test (as a failed health check)
    _turn: itertools.count[int] = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._client: httpx.AsyncClient | None = None

    def _next(self) -> int:
        with self._lock:
            return next(self._turn) % len(self.upstreams)

    def upstream_of(self, method: str, path: str) -> list[int]:
        """Which upstreams answered ``method path``, in order."""
        return [i for m, p, i in self.served if m == method and p == path]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            if self._client is not None:
                await self._client.aclose()
            await send({"type": "lifespan.shutdown.complete"})
            return
        request = Request(scope, receive)
        body = await request.body()  # small in these tests; a replica may be tried twice
        headers = [(k, v) for k, v in request.headers.raw if k.decode().lower() not in _HOP_BY_HOP]
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(60, read=None), follow_redirects=False)
        first = self._next()
        for step in range(len(self.upstreams)):
            index = (first + step) % len(self.upstreams)
            if index in self.down:
                continue
            url = httpx.URL(self.upstreams[index] + request.url.path, query=request.url.query.encode())
            try:
                upstream = await self._client.send(
                    self._client.build_request(request.method, url, headers=headers, content=body), stream=True)
            except httpx.ConnectError:
                continue
            self.served.append((request.method, request.url.path, index))
            out = [(k, v) for k, v in upstream.headers.raw if k.decode().lower() not in _HOP_BY_HOP]
            response = StreamingResponse(_relay(upstream), status_code=upstream.status_code,
                                         background=BackgroundTask(upstream.aclose))
            response.raw_headers = out
            await response(scope, receive, send)
            return
        await Response("no upstream answered", status_code=502)(scope, receive, send)


async def _relay(upstream: httpx.Response) -> AsyncIterator[bytes]:
    """The upstream's body as it arrives; a replica dying mid-stream ends the stream here too."""
    try:
        async for chunk in upstream.aiter_raw():
            yield chunk
    except httpx.HTTPError:
        return
