"""Bearer API keys and DNS-rebinding protection in front of ``/mcp``.

Every HTTP request to ``/mcp`` must pass, in this order:

1. Host and Origin checks (DNS rebinding): the Host must be a loopback name, the host of
   ``FABLE_BASE_URL`` or one of ``FABLE_ALLOWED_HOSTS``; a browser Origin must match one of
   those. Refused with 421 (Host) or 403 (Origin).
2. ``Authorization: Bearer <api key or OAuth access token>``: missing or unknown → 401 with
   ``WWW-Authenticate`` pointing at the RFC 9728 protected-resource metadata and naming the
   scopes, so clients discover what to send (and, with OAuth, where to get it).

The authenticated :class:`~fable_core.tools.caller.Caller` goes into the ASGI scope for the MCP
handlers, with the :class:`~fable_mcp.identity.Credential` that subscriptions check again later,
and an ``AuthenticatedUser`` for the SDK, which binds each MCP session to the key that opened
it: another key, even the same user's read-scope one, can neither use the session nor end it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from fable_core.config import Settings
from fable_core.errors import Unauthenticated
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_mcp.hosts import HostPolicy
from fable_mcp.identity import CALLER_SCOPE_KEY, CREDENTIAL_SCOPE_KEY, Credential

__all__ = ["Authenticate", "BearerKeyAuth", "RequireCaller", "base_url", "security_settings"]

Authenticate = Callable[[Request], Awaitable[Caller]]
METADATA_PATH = "/.well-known/oauth-protected-resource"
SCOPES = "read write"


def security_settings(settings: Settings) -> TransportSecuritySettings:
    """Allowed Host and Origin values for the SDK's own check: :class:`HostPolicy`'s."""
    return HostPolicy(settings).transport_settings()


def base_url(settings: Settings, request: Request) -> str:
    """FABLE_BASE_URL, or this request's scheme and host (a Host the :class:`HostPolicy` in
    front of every route admitted, so a configured name, never one a client made up)."""
    if settings.fable_base_url:
        return settings.fable_base_url.rstrip("/")
    return f"{request.url.scheme}://{request.headers.get('host', request.url.netloc)}"


class BearerKeyAuth:
    """Authenticate a request by its ``Authorization: Bearer fable_...`` API key."""

    def __init__(self, fable: Fable) -> None:
        self.fable = fable

    async def __call__(self, request: Request) -> Caller:
        header = request.headers.get("authorization", "")
        scheme, _, key = header.partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise Unauthenticated("this endpoint needs 'Authorization: Bearer <Fable API key or OAuth token>'")
        return await self.fable.keys.caller(key, "mcp")


class RequireCaller:
    """ASGI wrapper: rebinding checks, then authentication, then the MCP transport."""

    def __init__(self, app: ASGIApp, settings: Settings, authenticate: Authenticate) -> None:
        self.app = app
        self.settings = settings
        self.authenticate = authenticate
        self.security = TransportSecurityMiddleware(security_settings(settings))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        refused = await self.security.validate_request(request, is_post=False)
        if refused is not None:
            await refused(scope, receive, send)
            return
        try:
            caller = await self.authenticate(request)
        except Unauthenticated as e:
            await self._unauthorized(request, e, send)
            return
        credential = Credential(request, self.authenticate)
        scope[CALLER_SCOPE_KEY] = caller
        scope[CREDENTIAL_SCOPE_KEY] = credential
        scope["user"] = AuthenticatedUser(AccessToken(  # the SDK binds a session to its client_id
            token="", client_id=f"fable-key-{credential.key}", scopes=[caller.scope],
            subject=str(caller.user_id),
        ))
        await self.app(scope, receive, send)

    async def _unauthorized(self, request: Request, error: Unauthenticated, send: Send) -> None:
        metadata = f"{base_url(self.settings, request)}{METADATA_PATH}/mcp"
        given = "authorization" in request.headers
        challenge = f'Bearer realm="fable", resource_metadata="{metadata}", scope="{SCOPES}"'
        if given:
            challenge += f', error="invalid_token", error_description="{error.message}"'
        body = json.dumps({"error": "invalid_token" if given else "unauthorized",
                           "error_description": error.message}).encode()
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", challenge.encode()),
        ]})
        await send({"type": "http.response.body", "body": body})
