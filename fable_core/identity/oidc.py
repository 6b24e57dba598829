"""Sign-in with an OpenID Connect provider (Keycloak, Authentik, Authelia...): see docs/oidc.md.

The flow is the authorization code flow with PKCE (S256), a ``state`` and a ``nonce``:
:meth:`OidcClient.begin` makes the provider's authorization URL and the :class:`Pending` values
the browser keeps (signed, in a short-lived cookie) until the provider sends it back;
:meth:`OidcClient.finish` trades the code for tokens and validates the ID token: its signature
against the provider's JWKS, ``iss``, ``aud``, ``exp`` and the ``nonce``. The provider's
discovery document and keys are cached (the keys are fetched again once when a token names a key
id they lack: the provider rotated them).

:func:`account_for` then finds the account: by the (issuer, subject) pair it was linked to, else
by a *verified* email (``email_verified`` true at the provider, and the address verified here
too), which links it, else a new account when ``OIDC_AUTO_CREATE`` allows. The provider is the
operator's, so it is reached directly (not through the SSRF guard): it may well be on the LAN.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.config import Settings
from fable_core.db.models import User, UserIdentity
from fable_core.errors import Forbidden, InvalidInput, Unauthenticated, Unavailable
from fable_core.identity.accounts import USER_CREATION_LOCK, create_user

__all__ = ["CALLBACK_PATH", "LOGIN_PATH", "OidcClient", "Pending", "account_for"]

LOGIN_PATH = "/auth/oidc/login"
CALLBACK_PATH = "/auth/oidc/callback"
_CACHE_SECONDS = 3600.0
_TIMEOUT = 10.0
_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA"]  # never "none" or HMAC
_USERNAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True, slots=True)
class Pending:
    """What the browser holds between leaving for the provider and coming back."""

    state: str
    nonce: str
    verifier: str

    def dump(self) -> list[str]:
        return [self.state, self.nonce, self.verifier]

    @classmethod
    def load(cls, value: Any) -> Pending | None:
        if isinstance(value, list) and len(value) == 3 and all(isinstance(v, str) for v in value):
            return cls(*value)
        return None


class OidcClient:
    """The configured provider (one per process); :attr:`configured` says whether there is one."""

    def __init__(self, settings: Settings, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.settings = settings
        self.issuer = (settings.oidc_issuer or "").rstrip("/")
        self._transport = transport
        self._metadata: tuple[float, dict[str, Any]] | None = None
        self._keys: tuple[float, dict[str, Any]] | None = None

    @property
    def configured(self) -> bool:
        return bool(self.issuer and self.settings.oidc_client_id)

    async def begin(self, redirect_uri: str) -> tuple[str, Pending]:
        """The provider's authorization URL to send the browser to, and what to keep meanwhile."""
        meta = await self._discovery()
        pending = Pending(secrets.token_urlsafe(24), secrets.token_urlsafe(24), secrets.token_urlsafe(48))
        params = {
            "response_type": "code", "client_id": self.settings.oidc_client_id or "",
            "redirect_uri": redirect_uri, "scope": self.settings.oidc_scopes, "state": pending.state,
            "nonce": pending.nonce, "code_challenge": _s256(pending.verifier),
            "code_challenge_method": "S256",
        }
        return str(httpx.URL(meta["authorization_endpoint"], params=params)), pending

    async def finish(self, redirect_uri: str, pending: Pending, state: str, code: str) -> dict[str, Any]:
        """The validated ID token's claims for the code the provider sent back; Unauthenticated
        when the state, the token or its claims are not right."""
        if not secrets.compare_digest(state, pending.state):
            raise Unauthenticated("the sign-in's state does not match: start again from the sign-in page",
                                  reason="oidc_state")
        meta = await self._discovery()
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
                "code_verifier": pending.verifier, "client_id": self.settings.oidc_client_id or ""}
        auth = None
        if self.settings.oidc_client_secret:
            auth = httpx.BasicAuth(self.settings.oidc_client_id or "", self.settings.oidc_client_secret)
        response = await self._request("POST", meta["token_endpoint"], data=form, auth=auth)
        body = _json(response)
        if response.status_code != 200 or not isinstance(body.get("id_token"), str):
            reason = body.get("error_description") or body.get("error") or f"HTTP {response.status_code}"
            raise Unauthenticated(f"the sign-in provider refused the code: {str(reason)[:200]}", reason="oidc_token")
        return await self.validate(body["id_token"], pending.nonce)

    async def validate(self, id_token: str, nonce: str) -> dict[str, Any]:
        registry = jwt.JWTClaimsRegistry(
            leeway=60, iss={"essential": True, "value": self.issuer},
            aud={"essential": True, "value": self.settings.oidc_client_id or ""}, sub={"essential": True},
            exp={"essential": True}, iat={"essential": True}, nonce={"essential": True, "value": nonce})
        for refresh in (False, True):
            try:
                keys = KeySet.import_key_set(await self._jwks(refresh=refresh))  # type: ignore[arg-type]
                token = jwt.decode(id_token, keys, algorithms=_ALGORITHMS)
                registry.validate(token.claims)
            except InvalidKeyIdError as e:  # the provider may have rotated its keys: fetch them once more
                if refresh:
                    raise Unauthenticated(f"the sign-in provider's ID token is not valid: {e}",
                                          reason="oidc_token") from e
                continue
            except (JoseError, ValueError) as e:
                raise Unauthenticated(f"the sign-in provider's ID token is not valid: {e}", reason="oidc_token") from e
            claims = dict(token.claims)
            azp = claims.get("azp")
            if isinstance(claims.get("aud"), list) and len(claims["aud"]) > 1 and azp != self.settings.oidc_client_id:
                raise Unauthenticated("the sign-in provider's ID token was issued to another client",
                                      reason="oidc_token")
            return claims
        raise Unauthenticated("the sign-in provider's ID token is not valid", reason="oidc_token")  # pragma: no cover

    async def _discovery(self) -> dict[str, Any]:
        if not self.configured:
            raise Unavailable("sign-in with OIDC is not configured on this instance (OIDC_ISSUER, OIDC_CLIENT_ID)",
                              reason="oidc_not_configured")
        now = time.monotonic()
        if self._metadata is not None and self._metadata[0] > now:
            return self._metadata[1]
        response = await self._request("GET", f"{self.issuer}/.well-known/openid-configuration")
        meta = _json(response)
        needed = ("authorization_endpoint", "token_endpoint", "jwks_uri")
        if response.status_code != 200 or not all(isinstance(meta.get(k), str) for k in needed):
            raise Unavailable(f"the sign-in provider at {self.issuer} has no usable discovery document "
                              f"(HTTP {response.status_code})", reason="oidc_unavailable")
        if str(meta.get("issuer", "")).rstrip("/") != self.issuer:
            raise Unavailable(f"the sign-in provider calls itself {str(meta.get('issuer'))[:200]!r}, "
                              f"not OIDC_ISSUER {self.issuer!r}", reason="oidc_unavailable")
        self._metadata = (now + _CACHE_SECONDS, meta)
        return meta

    async def _jwks(self, *, refresh: bool) -> dict[str, Any]:
        now = time.monotonic()
        if not refresh and self._keys is not None and self._keys[0] > now:
            return self._keys[1]
        meta = await self._discovery()
        response = await self._request("GET", meta["jwks_uri"])
        keys = _json(response)
        if response.status_code != 200 or not isinstance(keys.get("keys"), list):
            raise Unavailable(f"the sign-in provider's keys could not be read (HTTP {response.status_code})",
                              reason="oidc_unavailable")
        self._keys = (now + _CACHE_SECONDS, keys)
        return keys

    async def _request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        try:
            async with httpx.AsyncClient(timeout=_TIMEOUT, transport=self._transport) as client:
                return await client.request(method, url, **kwargs)
        except httpx.HTTPError as e:
            raise Unavailable(f"the sign-in provider at {self.issuer} did not answer: "
                              f"{type(e).__name__} {str(e)[:200]}".rstrip(), reason="oidc_unavailable") from e


def _s256(verifier: str) -> str:
    """The PKCE code challenge of a verifier (RFC 7636, S256)."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


async def account_for(session: AsyncSession, issuer: str, claims: dict[str, Any], *, auto_create: bool) -> User:
    """The active account the provider's person signs in to: linked before, else linked now by a
    verified email, else created (``auto_create``); Forbidden otherwise or when it is disabled."""
    subject = str(claims["sub"])
    linked = (select(User).join(UserIdentity, UserIdentity.user_id == User.id)
              .where(UserIdentity.issuer == issuer, UserIdentity.subject == subject))
    user = await session.scalar(linked)
    if user is None:
        # Two first sign-ins of one person at once: the second waits here for the first to
        # commit, then finds its link (the lock account creation takes anyway).
        await session.execute(select(func.pg_advisory_xact_lock(USER_CREATION_LOCK)))
        user = await session.scalar(linked)
    if user is None:
        user = await _by_verified_email(session, claims)
        if user is None:
            if not auto_create:
                raise Forbidden("no Fable account matches this sign-in, and OIDC_AUTO_CREATE is off: "
                                "ask an admin for an account with your verified email address",
                                reason="oidc_no_account")
            user = await _create(session, claims)
        session.add(UserIdentity(user_id=user.id, issuer=issuer, subject=subject))
        await session.flush()
    if not user.is_active:
        raise Forbidden("this account is disabled", reason="disabled")
    return user


async def _by_verified_email(session: AsyncSession, claims: dict[str, Any]) -> User | None:
    email = claims.get("email")
    if claims.get("email_verified") is not True or not isinstance(email, str) or not email.strip():
        return None
    return await session.scalar(select(User).where(User.email == email.strip().lower(),
                                                   User.email_verified_at.is_not(None)))


async def _create(session: AsyncSession, claims: dict[str, Any]) -> User:
    """A new account (no password) named after the person's preferred username or email."""
    email = claims.get("email") if isinstance(claims.get("email"), str) else None
    wanted = claims.get("preferred_username") or (email or "").split("@")[0] or "user"
    base = _USERNAME_CHARS.sub("-", str(wanted)).strip("-._")[:56] or "user"
    if len(base) < 2:
        base = f"{base}-user"
    name = base
    for n in range(2, 1000):
        if await session.scalar(select(User.id).where(func.lower(User.username) == name.lower())) is None:
            break
        name = f"{base}-{n}"
    verified = claims.get("email_verified") is True and email is not None
    taken = verified and await session.scalar(select(User.id).where(
        User.email == (email or "").strip().lower(), User.email_verified_at.is_not(None))) is not None
    try:
        user = await create_user(session, name, None, email=email if verified and not taken else None)
    except InvalidInput:
        user = await create_user(session, f"user-{secrets.token_hex(4)}", None)
    if verified and not taken:
        user.email_verified_at = datetime.now(UTC)
        await session.flush()
    return user
