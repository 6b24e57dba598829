"""The browser session cookie: a signed wrapper around the session's random token.

The session itself lives in the database (:mod:`fable_core.login_sessions`), so signing out
ends it everywhere; the signature only lets garbage cookies be refused without a query. The
cookie is HttpOnly and SameSite=Lax, and Secure when ``SECURE_COOKIES`` is set.
"""

from __future__ import annotations

from itsdangerous import BadSignature, URLSafeSerializer
from starlette.responses import Response

from fable_core.login_sessions import LIFETIME

__all__ = ["COOKIE", "MAX_AGE", "SessionCodec"]

COOKIE = "fable_session"
MAX_AGE = int(LIFETIME.total_seconds())


class SessionCodec:
    """Signs and verifies session cookies with the instance's secret key."""

    def __init__(self, secret: str, *, secure: bool) -> None:
        self._signer = URLSafeSerializer(secret, salt="fable-session-token")
        self.secure = secure

    def decode(self, cookie: str | None) -> str | None:
        """The session token a cookie carries, or None for a missing or forged one."""
        if not cookie:
            return None
        try:
            token = self._signer.loads(cookie)
        except (BadSignature, ValueError, TypeError):
            return None
        return token if isinstance(token, str) else None

    def attach(self, response: Response, token: str) -> None:
        """Set the signed session cookie on ``response``."""
        response.set_cookie(COOKIE, self._signer.dumps(token), max_age=MAX_AGE, path="/", httponly=True,
                            samesite="lax", secure=self.secure)

    def clear(self, response: Response) -> None:
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="lax", secure=self.secure)
