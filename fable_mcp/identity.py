"""Who an MCP request runs as, and the per-connection state the server keeps.

Over HTTP the bearer-key middleware (:mod:`fable_mcp.auth`) puts the request's
:class:`~fable_core.tools.caller.Caller` into the ASGI scope; over stdio and in memory the server was
built for one local caller. Handlers never learn the caller any other way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from starlette.requests import Request

from fable_core.errors import Unauthenticated
from fable_core.tools.caller import Caller

__all__ = ["CALLER_SCOPE_KEY", "CREDENTIAL_SCOPE_KEY", "Credential", "connection_of", "credential_of",
           "resolve_caller"]

CALLER_SCOPE_KEY = "fable.caller"
CREDENTIAL_SCOPE_KEY = "fable.credential"


class Credential:
    """What an HTTP request authenticated with, checkable again later.

    A subscription outlives the request that made it: its notifications must stop when the
    key is revoked or its user disabled, as the next request with that key is refused. The
    check goes through the same authentication (and its few seconds of memory), so it costs a
    query at most once per key per :data:`fable_core.identity.key_callers.TTL`.
    """

    __slots__ = ("_authenticate", "_request")

    def __init__(self, request: Request, authenticate: Callable[[Request], Awaitable[Caller]]) -> None:
        self._request = request
        self._authenticate = authenticate

    @property
    def key(self) -> str:
        """Tells credentials apart without keeping the secret itself as a dictionary key."""
        return hashlib.sha256(self._request.headers.get("authorization", "").encode()).hexdigest()

    async def still_valid(self) -> bool:
        try:
            await self._authenticate(self._request)
        except Unauthenticated:
            return False
        return True


def credential_of(ctx: ServerRequestContext[Any, Any]) -> Credential | None:
    """The HTTP request's credential; None over stdio and in memory, where the server was
    started for its user and nothing can be revoked."""
    scope = getattr(ctx.request, "scope", None)
    credential = scope.get(CREDENTIAL_SCOPE_KEY) if isinstance(scope, dict) else None
    return credential if isinstance(credential, Credential) else None


def resolve_caller(ctx: ServerRequestContext[Any, Any], default: Caller | None) -> Caller:
    """The HTTP request's authenticated caller, else the server's local one."""
    scope = getattr(ctx.request, "scope", None)
    caller = scope.get(CALLER_SCOPE_KEY) if isinstance(scope, dict) else None
    if isinstance(caller, Caller):
        return caller
    if default is not None:
        return default
    raise Unauthenticated("this MCP request carries no credentials")


def connection_of(ctx: ServerRequestContext[Any, Any]) -> Connection:
    """The client connection a request arrived on (stable across its requests).

    The SDK keeps it on the request's session without a public accessor; this is the one
    place Fable reaches for it.
    """
    return ctx.session._connection
