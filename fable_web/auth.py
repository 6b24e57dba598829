"""Who is calling an /api route: an API key (``Authorization: Bearer``) or a session cookie.

Keys and sessions are checked against the database, but the answer is remembered for a couple
of seconds per process (keys in ``fable_core.key_callers``, shared with MCP), so a busy client
costs one signature check or hash per request, not a query.
A password change or key revocation clears this process's memory at once; other replicas
follow within :data:`TTL` seconds.

Cookie-authenticated unsafe requests must prove they come from our own pages: a same-origin
``Origin`` header or the session's CSRF token in ``X-CSRF-Token``. Read-scope keys may only use
safe methods.
"""

from __future__ import annotations

import hmac
import time
from dataclasses import dataclass

from sqlalchemy import select
from starlette.requests import Request

from fable_core.caller import Caller
from fable_core.db.models import User
from fable_core.errors import Forbidden, Unauthenticated
from fable_core.runtime import Fable
from fable_web.security import is_same_origin
from fable_web.sessions import COOKIE, Session, SessionCodec

__all__ = ["CSRF_HEADER", "SAFE_METHODS", "TTL", "Authenticator"]

TTL = 2.0
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSRF_HEADER = "x-csrf-token"
_MAX_ENTRIES = 10_000


@dataclass(frozen=True, slots=True)
class _Account:
    username: str
    role: str
    session_version: int
    is_active: bool


class Authenticator:
    """Resolves requests to callers; one per app."""

    def __init__(self, fable: Fable, codec: SessionCodec) -> None:
        self.fable = fable
        self.codec = codec
        self._accounts: dict[int, tuple[float, _Account | None]] = {}

    async def caller(self, request: Request) -> Caller:
        """The authenticated caller, or Unauthenticated / Forbidden."""
        header = request.headers.get("authorization")
        if header:
            return await self._key_caller(request, header)
        session = self.codec.decode(request.cookies.get(COOKIE))
        if session is None:
            raise Unauthenticated("sign in, or send an API key as 'Authorization: Bearer <key>'")
        caller = await self.session_caller(session)
        if request.method not in SAFE_METHODS:
            self._check_csrf(request, session)
        return caller

    async def session_caller(self, session: Session) -> Caller:
        account = await self._account(session.user_id)
        if account is None or not account.is_active or account.session_version != session.version:
            raise Unauthenticated("this session has ended; sign in again")
        return Caller(user_id=session.user_id, username=account.username, role=account.role, surface="web")

    def forget_user(self, user_id: int) -> None:
        self._accounts.pop(user_id, None)
        self.fable.keys.forget()  # the user's keys may have lost their reach too

    def forget_keys(self) -> None:
        self.fable.keys.forget()

    def _check_csrf(self, request: Request, session: Session) -> None:
        if is_same_origin(request, self.fable.settings.fable_base_url):
            return
        token = request.headers.get(CSRF_HEADER, "")
        if token and hmac.compare_digest(token, session.csrf):
            return
        raise Forbidden(
            "cross-site request refused: send a same-origin Origin header or the X-CSRF-Token "
            "from /api/auth/me",
            reason="csrf",
        )

    async def _key_caller(self, request: Request, header: str) -> Caller:
        scheme, _, key = header.partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise Unauthenticated("the Authorization header must be 'Bearer <API key>'")
        caller = await self.fable.keys.caller(key, "rest")
        if request.method not in SAFE_METHODS and not caller.can_write:
            raise Forbidden(f"this API key has read-only scope; {request.method} needs a write key")
        return caller

    async def _account(self, user_id: int) -> _Account | None:
        now = time.monotonic()
        cached = self._accounts.get(user_id)
        if cached is not None and cached[0] > now:
            return cached[1]
        async with self.fable.db.engine.connect() as conn:
            row = (await conn.execute(
                select(User.username, User.role, User.session_version, User.is_active)
                .where(User.id == user_id)
            )).first()
        account = _Account(*row) if row is not None else None
        self._remember(self._accounts, user_id, (now + TTL, account))
        return account

    @staticmethod
    def _remember(cache: dict, key: object, value: object) -> None:  # type: ignore[type-arg]
        if len(cache) >= _MAX_ENTRIES:
            cache.clear()
        cache[key] = value
