"""Browser sessions: a signed cookie holding the user id, session version and CSRF token.

Nothing is kept server-side, so any replica can check a session. Changing a password bumps the
user's ``session_version``; a cookie carrying an older version no longer authenticates. The
cookie is HttpOnly and SameSite=Lax, and Secure when ``SECURE_COOKIES`` is set.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from itsdangerous import BadSignature, URLSafeTimedSerializer
from starlette.responses import Response

__all__ = ["COOKIE", "MAX_AGE", "Session", "SessionCodec"]

COOKIE = "fable_session"
MAX_AGE = 30 * 24 * 3600


@dataclass(frozen=True, slots=True)
class Session:
    user_id: int
    version: int
    csrf: str


class SessionCodec:
    """Signs and verifies session cookies with the instance's secret key."""

    def __init__(self, secret: str, *, secure: bool) -> None:
        self._signer = URLSafeTimedSerializer(secret, salt="fable-session")
        self.secure = secure

    def decode(self, cookie: str | None) -> Session | None:
        if not cookie:
            return None
        try:
            user_id, version, csrf = self._signer.loads(cookie, max_age=MAX_AGE)
            return Session(int(user_id), int(version), str(csrf))
        except (BadSignature, ValueError, TypeError):
            return None

    @staticmethod
    def start(user_id: int, version: int) -> Session:
        """A new session with a fresh CSRF token (which the client gets in the JSON body)."""
        return Session(user_id, version, secrets.token_urlsafe(24))

    def attach(self, response: Response, session: Session) -> None:
        """Set the signed session cookie on ``response``."""
        value = self._signer.dumps([session.user_id, session.version, session.csrf])
        response.set_cookie(
            COOKIE, value, max_age=MAX_AGE, path="/", httponly=True, samesite="lax", secure=self.secure
        )

    def clear(self, response: Response) -> None:
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="lax", secure=self.secure)
