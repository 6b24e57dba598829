"""MCP over streamable HTTP at exactly ``/mcp``, for the app ``fable serve`` runs.

:class:`McpHttp` gives the host application its routes and a lifespan to enter (a mounted
sub-app's lifespan would never run, and ``Mount("/mcp")`` answers ``POST /mcp`` with a 307).
:func:`create_app` is the smallest such host: MCP alone.

Around the SDK's transport: CORS for the origins DNS-rebinding protection admits (browser
clients such as the MCP Inspector send a preflight), a plain 405 for methods MCP does not use,
and ``/mcp/`` redirected (308) to ``/mcp`` rather than falling through to the web UI.

Sessions are stateful (server-to-client streams, subscriptions); each is bound to the key
that opened it, idle ones are closed, and each key may hold only so many
(:mod:`fable_mcp.session_quota`). Behind a load balancer (``FABLE_REPLICA_URL``) sessions are
registered in the database and requests for another replica's session forwarded there
(:mod:`fable_mcp.session_routes`). Clients speaking 2025-06-18, 2025-11-25 or the SDK's sessionless
2026-07-28 protocol are all served by the same route.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from fable_core.admin.instance import public_url
from fable_core.config import session_limit
from fable_core.infra.mcp_sessions import SessionRegistry
from fable_core.runtime import Fable
from fable_mcp.auth import (
    METADATA_PATH,
    Authenticate,
    BearerKeyAuth,
    RequireCaller,
    base_url,
    security_settings,
)
from fable_mcp.hosts import AllowedHosts, HostPolicy
from fable_mcp.server import FableMcp
from fable_mcp.session_quota import SessionQuota
from fable_mcp.session_routes import RegisteredSessions, SessionRoutes

__all__ = ["McpHttp", "create_app"]


class McpHttp:
    """The ``/mcp`` endpoint and its RFC 9728 metadata, over one Fable.

    ``authenticate`` turns a request into a caller; the default checks bearer API keys (and
    OAuth access tokens). Tests of clients that cannot send credentials (the conformance suite)
    pass their own. ``oauth``: this Fable serves its authorization server (the web app does), so
    the metadata names it, at the public URL, once there is one.
    """

    def __init__(self, fable: Fable, *, authenticate: Authenticate | None = None, oauth: bool = False) -> None:
        self.fable = fable
        self.settings = fable.settings
        self.oauth = oauth
        self.mcp = FableMcp(fable)
        self.session_manager = RegisteredSessions(
            app=self.mcp.server,
            security_settings=security_settings(self.settings),
            max_request_body_size=self.settings.fable_max_body_bytes,
            session_idle_timeout=self.settings.fable_mcp_session_idle_seconds,
            max_sessions=session_limit(self.settings),
        )
        transport: ASGIApp = StreamableHTTPASGIApp(self.session_manager)
        self.sessions: SessionRoutes | None = None  # several replicas: sessions registered, forwarded
        if self.settings.fable_replica_url:
            self.sessions = SessionRoutes(transport, SessionRegistry(fable.db, self.settings.fable_replica_url))
            self.session_manager.routes = transport = self.sessions
        self.quota = SessionQuota(transport, per_key=self.settings.fable_mcp_sessions_per_key,
                                  idle_seconds=self.settings.fable_mcp_session_idle_seconds,
                                  registry=self.sessions.registry if self.sessions else None)
        endpoint = CORSMiddleware(
            _McpMethods(RequireCaller(self.quota, self.settings, authenticate or BearerKeyAuth(fable))),
            # Safe to open to the origins the host policy admits: /mcp authenticates by a bearer
            # key alone, never by a cookie a page could ride on.
            allow_origin_regex=HostPolicy(self.settings).origin_regex(),
            allow_methods=_METHODS, allow_headers=["*"], expose_headers=_EXPOSED, max_age=600,
        )
        self.routes = [
            Route("/mcp", endpoint=endpoint),  # every method: the ones MCP does not use get a 405 here
            Route("/mcp/", endpoint=_to_mcp, methods=[*_METHODS, "PUT", "PATCH", "OPTIONS"]),
            Route(METADATA_PATH, endpoint=self._metadata, methods=["GET"]),
            Route(f"{METADATA_PATH}/mcp", endpoint=self._metadata, methods=["GET"]),
        ]

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Run the session manager (and the session registry); the host app's lifespan enters this."""
        await asyncio.to_thread(self.fable.registry.prepare_schemas)
        async with contextlib.AsyncExitStack() as stack:
            if self.sessions is not None:
                await stack.enter_async_context(self.sessions.running())
            await stack.enter_async_context(self.session_manager.run())
            yield

    def on_drain(self) -> list[Callable[[], None]]:
        """What a SIGTERM ends at once (:mod:`fable_web.drain`): listen streams, registered sessions."""
        return [self.mcp.subscriptions.end_listens, *([self.sessions.drain] if self.sessions else [])]

    async def _metadata(self, request: Request) -> JSONResponse:
        """OAuth 2.0 Protected Resource Metadata (RFC 9728): where and how to authenticate. With
        the authorization server on and a public URL, the resource is named by that URL (never
        by the request's Host) and the authorization server is this Fable."""
        public = None
        if self.oauth:
            async with self.fable.db.reading() as session:
                public, _ = await public_url(session, self.settings)
        base = public or base_url(self.settings, request)
        meta: dict[str, object] = {
            "resource": f"{base}/mcp",
            "resource_name": "Fable",
            "bearer_methods_supported": ["header"],
            "scopes_supported": ["read", "write"],
        }
        if public:
            meta["authorization_servers"] = [public]
        return JSONResponse(meta, headers={"Access-Control-Allow-Origin": "*"})


_METHODS = ("GET", "POST", "DELETE")
_ALLOW = ", ".join(_METHODS)
# Response headers a browser client must be able to read: its session, the protocol spoken,
# and the 401's pointer to the protected-resource metadata.
_EXPOSED = ["mcp-session-id", "mcp-protocol-version", "www-authenticate"]


class _McpMethods:
    """Only GET, POST and DELETE reach the transport; OPTIONS lists them, the rest are 405."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] in _METHODS:
            await self.app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS":
            response = Response(status_code=204, headers={"Allow": _ALLOW})
        else:
            response = Response(f"{scope['method']} is not allowed on /mcp; use {_ALLOW}",
                                status_code=405, headers={"Allow": _ALLOW})
        await response(scope, receive, send)


async def _to_mcp(request: Request) -> Response:
    """``/mcp/`` → ``/mcp``, method and body kept (308), for a client configured with the slash."""
    query = request.url.query
    return RedirectResponse("/mcp" + (f"?{query}" if query else ""), status_code=308)


def create_app(fable: Fable, *, authenticate: Authenticate | None = None) -> Starlette:
    """A Starlette app serving only MCP (and its metadata) for ``fable``."""
    mcp = McpHttp(fable, authenticate=authenticate)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with mcp.lifespan():
            yield

    return Starlette(routes=mcp.routes, lifespan=lifespan,
                     middleware=[Middleware(AllowedHosts, policy=HostPolicy(fable.settings))])
