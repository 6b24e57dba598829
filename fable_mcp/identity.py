"""Who an MCP request runs as, and the per-connection state the server keeps.

Over HTTP the bearer-key middleware (:mod:`fable_mcp.auth`) puts the request's
:class:`~fable_core.caller.Caller` into the ASGI scope; over stdio and in memory the server was
built for one local caller. Handlers never learn the caller any other way.
"""

from __future__ import annotations

from typing import Any

from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext

from fable_core.caller import Caller
from fable_core.errors import Unauthenticated

__all__ = ["CALLER_SCOPE_KEY", "connection_of", "resolve_caller"]

CALLER_SCOPE_KEY = "fable.caller"


def resolve_caller(ctx: ServerRequestContext[Any, Any], default: Caller | None) -> Caller:
    """The HTTP request's authenticated caller, else the server's local one."""
    request = ctx.request
    scope = getattr(request, "scope", None)
    if isinstance(scope, dict) and isinstance(scope.get(CALLER_SCOPE_KEY), Caller):
        return scope[CALLER_SCOPE_KEY]
    if default is not None:
        return default
    raise Unauthenticated("this MCP request carries no credentials")


def connection_of(ctx: ServerRequestContext[Any, Any]) -> Connection:
    """The client connection a request arrived on (stable across its requests).

    The SDK keeps it on the request's session without a public accessor; this is the one
    place Fable reaches for it.
    """
    return ctx.session._connection
