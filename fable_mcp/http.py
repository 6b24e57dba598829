"""MCP over streamable HTTP at exactly ``/mcp``, for the app ``fable serve`` runs.

:class:`McpHttp` gives the host application its routes and a lifespan to enter (a mounted
sub-app's lifespan would never run, and ``Mount("/mcp")`` answers ``POST /mcp`` with a 307).
:func:`create_app` is the smallest such host: MCP alone.

Sessions are stateful (server-to-client streams, subscriptions); each is bound to the
credential that opened it. Clients speaking 2025-06-18, 2025-11-25 or the SDK's sessionless
2026-07-28 protocol are all served by the same route.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from fable_core.runtime import Fable
from fable_mcp.auth import (
    METADATA_PATH,
    Authenticate,
    BearerKeyAuth,
    RequireCaller,
    base_url,
    security_settings,
)
from fable_mcp.direct import DirectToolCalls
from fable_mcp.server import FableMcp

__all__ = ["McpHttp", "create_app"]


class McpHttp:
    """The ``/mcp`` endpoint and its RFC 9728 metadata, over one Fable.

    ``authenticate`` turns a request into a caller; the default checks bearer API keys.
    Tests of clients that cannot send credentials (the conformance suite) pass their own.
    Quiet 2026-07-28 tool calls take the direct path (:mod:`fable_mcp.direct`);
    ``direct_calls=False`` sends everything through the SDK, which the tests compare it with.
    """

    def __init__(self, fable: Fable, *, authenticate: Authenticate | None = None,
                 direct_calls: bool = True) -> None:
        self.fable = fable
        self.settings = fable.settings
        self.mcp = FableMcp(fable)
        self.session_manager = StreamableHTTPSessionManager(
            app=self.mcp.server,
            security_settings=security_settings(self.settings),
            max_request_body_size=self.settings.fable_max_body_bytes,
        )
        transport: ASGIApp = StreamableHTTPASGIApp(self.session_manager)
        self.direct: DirectToolCalls | None = None
        if direct_calls:
            transport = self.direct = DirectToolCalls(transport, self.mcp, TransportSecurityMiddleware(
                security_settings(self.settings)), self.settings.fable_max_body_bytes)
        endpoint = RequireCaller(transport, self.settings, authenticate or BearerKeyAuth(fable))
        self.routes = [
            Route("/mcp", endpoint=endpoint, methods=["GET", "POST", "DELETE"]),
            Route(METADATA_PATH, endpoint=self._metadata, methods=["GET"]),
            Route(f"{METADATA_PATH}/mcp", endpoint=self._metadata, methods=["GET"]),
        ]

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Run the session manager; the host app's lifespan enters this."""
        async with self.session_manager.run():
            yield

    async def _metadata(self, request: Request) -> JSONResponse:
        """OAuth 2.0 Protected Resource Metadata (RFC 9728): where and how to authenticate."""
        base = base_url(self.settings, request)
        return JSONResponse({
            "resource": f"{base}/mcp",
            "resource_name": "Fable",
            "bearer_methods_supported": ["header"],
            "scopes_supported": ["read", "write"],
        }, headers={"Access-Control-Allow-Origin": "*"})


def create_app(fable: Fable, *, authenticate: Authenticate | None = None,
               direct_calls: bool = True) -> Starlette:
    """A Starlette app serving only MCP (and its metadata) for ``fable``."""
    mcp = McpHttp(fable, authenticate=authenticate, direct_calls=direct_calls)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with mcp.lifespan():
            yield

    return Starlette(routes=mcp.routes, lifespan=lifespan)
