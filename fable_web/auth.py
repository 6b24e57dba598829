"""Who is calling an /api route: an API key (``Authorization: Bearer``) or a session cookie.

Keys and sessions are checked against the database, but the answer is remembered for a couple
of seconds per process (keys in ``fable_core.identity.key_callers``, shared with MCP), so a busy client
costs one signature check or hash per request, not a query. Signing out, a password change, a
disabled user or a key revocation clears this process's memory at once, and every other
process's when it commits (:mod:`fable_core.identity.revocations`); a lost notice leaves them to
:data:`TTL` seconds.

Cookie-authenticated unsafe requests must prove they come from our own pages: a same-origin
``Origin`` header or the session's CSRF token in ``X-CSRF-Token``. What a read-scope key may
do is the tool's scope on routes that run a tool (as over MCP), and safe methods only on the
others. Credentials and accounts (passwords, email,
sessions, invitations, administration) are managed from a signed-in session only: a leaked API
key must not be able to change the password or mint invitations.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import time

from starlette.requests import Request

from fable_core.errors import Forbidden, Unauthenticated
from fable_core.identity.login_sessions import SessionInfo, find_session
from fable_core.runtime import Fable
from fable_core.tools.access import belongs_to
from fable_core.tools.caller import Caller
from fable_web.ratelimit import client_ip
from fable_web.requestlog import note_user
from fable_web.security import is_same_origin
from fable_web.sessions import COOKIE, SessionCodec

__all__ = ["CSRF_HEADER", "SAFE_METHODS", "TTL", "Authenticator"]

TTL = 2.0
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSRF_HEADER = "x-csrf-token"
_MAX_ENTRIES = 10_000


class Authenticator:
    """Resolves requests to callers; one per app."""

    def __init__(self, fable: Fable, codec: SessionCodec) -> None:
        self.fable = fable
        self.codec = codec
        self._sessions: dict[str, tuple[float, SessionInfo | None]] = {}
        self._epoch = 0  # one more at each revocation heard: an answer read before it is not remembered
        fable.revocations.on_revoked(self._forget_sessions)

    async def caller(self, request: Request, *, tool: bool = False) -> Caller:
        """The authenticated caller, or Unauthenticated / Forbidden. On a route that runs a
        tool (``tool``) the tool's scope decides what a read-scope key may do, as on every
        surface; on the others, HTTP's method does (safe methods only)."""
        header = request.headers.get("authorization")
        if header:
            caller = await self._key_caller(request, header, tool)
            note_user(request, caller.user_id, caller.username)
            return self._reached(request, caller)
        info = await self._signed_in(request)
        return self._reached(request, Caller(user_id=info.user_id, username=info.username, role=info.role,
                                             surface="web", credential="session", session_id=info.id))

    def _reached(self, request: Request, caller: Caller) -> Caller:
        """``caller`` with what a tool may know of how this request reached Fable: the URL it
        used, whose Host the host policy admitted before anything ran, and the client's address
        as the rate limits count it."""
        s = self.fable.settings
        return dataclasses.replace(caller, base_url=str(request.base_url).rstrip("/"),
                                   address=client_ip(request, s.trust_proxy_headers, s.trusted_proxy_hops))

    async def session(self, request: Request) -> SessionInfo:
        """The request's signed-in session, for routes that manage credentials and accounts;
        Forbidden for an API key, Unauthenticated without a session."""
        if "authorization" in request.headers:
            raise Forbidden("this needs a signed-in session: API keys cannot manage passwords, "
                            "email, sessions, invitations or accounts", reason="session_only")
        return await self._signed_in(request)

    async def current(self, request: Request) -> SessionInfo | None:
        """The request's live session if its cookie names one (no CSRF check: for sign-out,
        which checks it only when there is a session to end)."""
        token = self.codec.decode(request.cookies.get(COOKIE))
        return await self._lookup(token) if token else None

    def check_csrf(self, request: Request, info: SessionInfo) -> None:
        if request.method in SAFE_METHODS or is_same_origin(request, self.fable.settings.fable_base_url):
            return
        token = request.headers.get(CSRF_HEADER, "")
        if token and hmac.compare_digest(token, info.csrf):
            return
        raise Forbidden(
            "cross-site request refused: send a same-origin Origin header or the X-CSRF-Token "
            "from /api/auth/me",
            reason="csrf",
        )

    def forget_user(self, user_id: int) -> None:
        """Drop what this process remembers of the user's sessions and keys."""
        for key, (_, info) in list(self._sessions.items()):
            if info is not None and belongs_to(info.user_id, user_id):
                self._sessions.pop(key, None)
        self.fable.keys.forget()  # the user's keys may have lost their reach too

    def _forget_sessions(self) -> None:
        self._epoch += 1
        self._sessions.clear()

    def forget_token(self, token: str) -> None:
        self._sessions.pop(_digest(token), None)

    def forget_keys(self) -> None:
        self.fable.keys.forget()

    async def _signed_in(self, request: Request) -> SessionInfo:
        info = await self.current(request)
        if info is None:
            if request.cookies.get(COOKIE):
                raise Unauthenticated("this session has ended; sign in again")
            raise Unauthenticated("sign in, or send an API key as 'Authorization: Bearer <key>'")
        self.check_csrf(request, info)
        note_user(request, info.user_id, info.username)
        return info

    async def _lookup(self, token: str) -> SessionInfo | None:
        digest = _digest(token)
        now = time.monotonic()
        cached = self._sessions.get(digest)
        if cached is not None and cached[0] > now:
            return cached[1]
        epoch = self._epoch
        heard = self.fable.revocations.hearing()  # before the read: only then is the answer remembered
        async with self.fable.db.transaction() as session:
            info = await find_session(session, token)
        if info is not None and not info.is_active:
            info = None
        if epoch != self._epoch:  # revoked while we looked: the answer may predate it
            return info
        self.fable.revocations.watch()  # from the first session remembered
        if not heard:  # another process's revocation may not reach us yet: remembered once it would
            return info
        if len(self._sessions) >= _MAX_ENTRIES:
            self._sessions.clear()
        self._sessions[digest] = (now + TTL, info)
        return info

    async def _key_caller(self, request: Request, header: str, tool: bool) -> Caller:
        scheme, _, key = header.partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise Unauthenticated("the Authorization header must be 'Bearer <API key>'")
        caller = await self.fable.keys.caller(key, "rest")
        if not tool and request.method not in SAFE_METHODS and not caller.can_write:
            raise Forbidden(f"this API key has read-only scope; {request.method} needs a write key")
        return caller


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
