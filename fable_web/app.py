"""The Starlette app: REST under /api, MCP at /mcp, the web UI at /.

Every request first passes the host policy (:mod:`fable_mcp.hosts`: a Host this Fable was not
configured to answer to gets 421). Routes are one explicit list. Every /api route authenticates
inside its handler (there is no authentication middleware, so public routes need no exemption
list); unknown /api paths get a JSON 404 (or 405 when the path exists with other methods), other
paths the UI.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Mount, Route

from fable_core.config import request_limit
from fable_core.errors import InvalidInput, NotFound
from fable_core.runtime import Fable
from fable_core.tools.binary import MAX_BINARY
from fable_mcp.hosts import AllowedHosts, HostPolicy
from fable_mcp.http import McpHttp
from fable_web import (
    account_api,
    health,
    oauth_api,
    oidc_api,
    openapi,
    render,
    rest,
)
from fable_web.context import WebContext
from fable_web.errors import MethodNotAllowed, error_response, exception_handlers
from fable_web.requestlog import RequestLog
from fable_web.security import SecurityMiddleware
from fable_web.shed import Load, Shed
from fable_web.spa import SpaFiles
from fable_web.timeouts import BodyTimeoutMiddleware

__all__ = ["create_app"]

_ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def api_routes(fable: Fable) -> list[BaseRoute]:
    return [
        *health.routes,
        *openapi.routes,
        *account_api.routes,
        *oidc_api.routes,
        *oauth_api.routes,
        *render.routes,
        *rest.routes(fable.registry),
    ]


def _api_fallback(known: list[BaseRoute]) -> list[Route]:
    """JSON 405 for a known path with another method; 422 for a known path whose typed
    parameter is not of its type (``/api/notes/abc``); JSON 404 for any other /api path."""
    loose = [(Route(r.path.replace(":int}", "}"), r.endpoint, methods=r.methods), r)
             for r in known if isinstance(r, Route) and ":int}" in r.path]

    async def api_not_found(request: Request) -> Response:
        allowed: set[str] = set()
        for route in known:
            match, _ = route.matches(request.scope)
            if match is not Match.NONE and isinstance(route, Route):
                allowed |= route.methods or set()
        if allowed:
            err = MethodNotAllowed(f"{request.method} is not allowed on {request.url.path}",
                                   allowed=sorted(allowed))
            return error_response(err, headers={"Allow": ", ".join(sorted(allowed))})
        for pattern, route in loose:
            match, child = pattern.matches(request.scope)
            if match is Match.FULL:
                return error_response(_not_an_integer(route, child["path_params"]))
        return error_response(NotFound(f"no such endpoint: {request.url.path}", path=request.url.path))

    return [
        Route("/api", api_not_found, methods=_ALL_METHODS),
        Route("/api/{rest:path}", api_not_found, methods=_ALL_METHODS),
    ]


def _not_an_integer(route: Route, values: dict[str, str]) -> InvalidInput:
    names = [name for name, convertor in route.param_convertors.items() if convertor.regex == "[0-9]+"]
    bad = next((name for name in names if not values.get(name, "").isdigit()), names[0])
    message = f"{bad} must be a positive integer, not {values.get(bad, '')[:100]!r}"
    return InvalidInput(message, errors=[{"field": bad, "message": "Input should be a valid integer",
                                          "input": repr(values.get(bad, ""))[:200]}])


def upload_limits(fable: Fable) -> dict[str, int]:
    """The body limit of each route whose body may be a tool's Binary argument: the tool's own
    (``@tool(body_limit=...)``, a restore's ``FABLE_RESTORE_MAX_BYTES``), else the largest image,
    ``FABLE_IMAGE_MAX_BYTES``, with room for a multipart form's framing (on the tool's route) or
    as base64 (``POST /api/tools/<name>``, a JSON body read whole: at most ``MAX_BINARY``), when
    that is more than ``FABLE_MAX_BODY_BYTES``."""
    settings = fable.settings
    limits: dict[str, int] = {}
    for t in fable.registry:
        if t.signature.binary_param is not None:
            limit = t.body_limit(settings) if t.body_limit is not None else settings.fable_image_max_bytes
            limits[f"/api/tools/{t.name}"] = max(settings.fable_max_body_bytes,
                                                 min(limit, MAX_BINARY) * 4 // 3 + 65_536)
            if t.route is not None:
                limits[f"/api{t.route.path}"] = max(settings.fable_max_body_bytes, limit + 65_536)
    return limits


def create_app(fable: Fable) -> Starlette:
    """The whole web surface over an open :class:`Fable` (which the caller closes)."""
    known = api_routes(fable)
    load = Load(request_limit(fable.settings))  # fable_web.shed: what is refused at once
    mcp = McpHttp(fable, oauth=fable.settings.fable_oauth_enabled)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with mcp.lifespan():
            yield

    app = Starlette(
        routes=[*known, *_api_fallback(known), *mcp.routes, *oidc_api.browser_routes, *oauth_api.wire_routes,
                Mount("/", app=SpaFiles(secure=fable.settings.secure_cookies), name="ui")],
        middleware=[
            Middleware(BodyTimeoutMiddleware, body_timeout=fable.settings.fable_body_timeout),
            Middleware(Shed, load=load),
            Middleware(SecurityMiddleware, max_body=fable.settings.fable_max_body_bytes, larger=upload_limits(fable)),
            Middleware(AllowedHosts, policy=HostPolicy(fable.settings)),
            Middleware(RequestLog, usage=fable.dispatcher.usage, enabled=fable.settings.fable_log_requests),
        ],
        exception_handlers=exception_handlers,
        lifespan=lifespan,
    )
    app.state.web = WebContext.build(fable)
    app.state.load = load
    app.state.openapi = None
    app.state.on_drain = mcp.on_drain()  # fable_web.drain: what a SIGTERM ends at once
    return app
