"""The browser session cookie: a signed wrapper around the session's random token; and the
known-device cookie.

The session itself lives in the database (:mod:`fable_core.identity.login_sessions`), so signing out
ends it everywhere; the signature only lets garbage cookies be refused without a query. The
cookie is HttpOnly and SameSite=Lax, and Secure when ``SECURE_COOKIES`` is set.

Beside it the browser gets :data:`HINT_COOKIE`, ``1`` and nothing else, which scripts may read:
the web UI asks "who am I?" only when it is there, so a signed-out visitor's pages send no request
bound to be refused. It grants nothing (the server never reads it); a session ended elsewhere
leaves it behind until the UI's one refused question removes it.

A browser that signed in to an account keeps a second, long-lived cookie naming that account
(signed; :data:`DEVICE_COOKIE`). The account-wide limits on password attempts and reset mails
(:data:`fable_core.infra.rate_limits.LIMITS`, ``*_account``) count strangers, not that browser: twenty
wrong passwords from twenty addresses locked the owner out for 15 minutes, right password and
all (OWASP's "device cookies"). The per-address limits hold for everyone.
"""

from __future__ import annotations

from itsdangerous import BadSignature, URLSafeSerializer
from starlette.responses import Response

from fable_core.identity.login_sessions import LIFETIME

__all__ = ["COOKIE", "DEVICE_COOKIE", "HINT_COOKIE", "MAX_AGE", "SessionCodec"]

COOKIE = "fable_session"
HINT_COOKIE = "fable_signed_in"  # not HttpOnly: for the web UI, never read by the server
MAX_AGE = int(LIFETIME.total_seconds())
DEVICE_COOKIE = "fable_device"
DEVICE_MAX_AGE = 400 * 86400  # browsers cap cookies at 400 days


class SessionCodec:
    """Signs and verifies session cookies with the instance's secret key."""

    def __init__(self, secret: str, *, secure: bool) -> None:
        self._signer = URLSafeSerializer(secret, salt="fable-session-token")
        self._devices = URLSafeSerializer(secret, salt="fable-known-device")
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
        response.set_cookie(HINT_COOKIE, "1", max_age=MAX_AGE, path="/", httponly=False, samesite="lax",
                            secure=self.secure)

    def clear(self, response: Response) -> None:
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="lax", secure=self.secure)
        response.delete_cookie(HINT_COOKIE, path="/", httponly=False, samesite="lax", secure=self.secure)

    def knows(self, cookie: str | None, account: str) -> bool:
        """Whether the known-device cookie says this browser signed in to ``account`` before."""
        if not cookie or not account:
            return False
        try:
            known = self._devices.loads(cookie)
        except (BadSignature, ValueError, TypeError):
            return False
        return isinstance(known, str) and known == account.strip().lower()

    def remember(self, response: Response, account: str) -> None:
        """Mark this browser as one that signed in to ``account`` (its name, lower case)."""
        response.set_cookie(DEVICE_COOKIE, self._devices.dumps(account.strip().lower()), max_age=DEVICE_MAX_AGE,
                            path="/api/auth", httponly=True, samesite="lax", secure=self.secure)
