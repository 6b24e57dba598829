"""A per-key cap on open MCP sessions, so one key cannot take every session this server has.

The SDK bounds sessions per process (``FABLE_MCP_MAX_SESSIONS``) and closes idle ones
(``FABLE_MCP_SESSION_IDLE_SECONDS``); without a cap per key, one client opening sessions in a
loop would fill that bound and lock everyone else out. This wrapper, in front of the transport
and after authentication, remembers which key opened which session (from the
``Mcp-Session-Id`` of the answer to the opening request), when each was last used, and which
were closed (a DELETE); a key holding ``per_key`` live sessions gets 429 for the next one.
A session unused for the idle timeout counts as gone: the SDK has closed it. With several
replicas (``FABLE_REPLICA_URL``) the count is of the key's sessions on every replica, from the
session registry (:mod:`fable_core.infra.mcp_sessions`).

Only 2025-era requests open sessions: a POST without a session id whose protocol version (if
any) is one of the handshake versions. The 2026-07-28 protocol is sessionless and never counted.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fable_core.infra.mcp_sessions import SessionRegistry
from fable_mcp.identity import CREDENTIAL_SCOPE_KEY

__all__ = ["SessionQuota"]

_SESSION = "mcp-session-id"


@dataclass
class _Key:
    sessions: dict[str, float] = field(default_factory=dict)  # session id -> last used (monotonic)


class SessionQuota:
    """ASGI wrapper counting each key's open MCP sessions."""

    def __init__(self, app: ASGIApp, *, per_key: int, idle_seconds: float,
                 registry: SessionRegistry | None = None) -> None:
        self.app = app
        self.per_key = per_key
        self.idle_seconds = idle_seconds
        self.registry = registry
        self._keys: dict[str, _Key] = {}

    def open_sessions(self, key: str) -> int:
        return len(self._live(key).sessions)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        credential = scope.get(CREDENTIAL_SCOPE_KEY)
        if credential is None:
            await self.app(scope, receive, send)
            return
        key, headers = credential.key, Headers(scope=scope)
        session = headers.get(_SESSION)
        if session is not None:
            await self._in_session(key, session, scope, receive, send)
        elif scope["method"] == "POST" and headers.get("mcp-protocol-version") in (None, *HANDSHAKE_PROTOCOL_VERSIONS):
            await self._opening(key, scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _in_session(self, key: str, session: str, scope: Scope, receive: Receive, send: Send) -> None:
        known = self._keys.get(key)
        if known is not None and session in known.sessions:
            known.sessions[session] = time.monotonic()
        await self.app(scope, receive, send)
        if scope["method"] == "DELETE" and known is not None:
            known.sessions.pop(session, None)

    async def _opening(self, key: str, scope: Scope, receive: Receive, send: Send) -> None:
        live = self._live(key)
        held = len(live.sessions) if self.registry is None else await self.registry.count(key)
        if held >= self.per_key:
            await _refuse(send, self.per_key)
            return

        async def noting(message: Message) -> None:
            if message["type"] == "http.response.start":
                opened = Headers(raw=message.get("headers", [])).get(_SESSION)
                if opened is not None and message["status"] < 300:
                    live.sessions[opened] = time.monotonic()
                    self._keys[key] = live
            await send(message)

        await self.app(scope, receive, noting)

    def _live(self, key: str) -> _Key:
        """The key's sessions, without those the SDK has closed as idle."""
        entry = self._keys.get(key, _Key())
        cutoff = time.monotonic() - self.idle_seconds
        entry.sessions = {s: t for s, t in entry.sessions.items() if t > cutoff}
        if not entry.sessions:
            self._keys.pop(key, None)
        return entry


async def _refuse(send: Send, per_key: int) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
        "code": -32000,
        "message": f"this API key already has {per_key} MCP sessions open; close one (DELETE /mcp "
                   "with its Mcp-Session-Id) or let an idle one expire",
    }}).encode()
    await send({"type": "http.response.start", "status": 429, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"retry-after", b"60"),
    ]})
    await send({"type": "http.response.body", "body": body})
