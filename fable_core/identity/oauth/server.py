"""The authorization server's rules: authorization requests, codes, tokens, revocation.

An **authorization request** (``/oauth/authorize``) names a registered client and one of its
redirect URIs (else it is refused *without* redirecting: no open redirect), asks for
``response_type=code`` with a PKCE ``S256`` challenge, scopes among ``read`` and ``write``
(``write`` includes ``read``) and optionally the RFC 8707 ``resource``, which must be this
Fable's: ``<public URL>/mcp`` (the default) or the public URL itself. The public URL is the
configured or pinned one (:func:`fable_core.admin.instance.public_url`), never a request's Host.

A remembered approval sends the person straight back only when the redirect URI is ``https``
(:func:`proves_client`); a native app's loopback or private-use redirect is asked again each time.

A **code** is single use and short-lived (``FABLE_OAUTH_CODE_SECONDS``), bound to the redirect
URI, the challenge and the resource. Redeeming it twice revokes the tokens it gave (RFC 6749
§4.1.2). It is exchanged for an **access token** (``fat_...``) and a **refresh token**
(``frt_...``) of one *family*. A refresh token is used once: it is replaced by a new pair; using
a replaced one again means it leaked, and the whole family is revoked (OAuth 2.1 §4.3.1).
Revoking (RFC 7009) a refresh token revokes its family; an access token, itself.

Every secret is stored as its SHA-256. Functions here run in the caller's transaction; the token
endpoint's refusals are *returned* (:class:`Refusal`) rather than raised, so that what a refusal
does (revoking a family, its audit row) commits with it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from authlib.common.urls import add_params_to_uri
from authlib.oauth2.rfc6749.errors import (
    InvalidClientError,
    InvalidGrantError,
    InvalidRequestError,
    InvalidScopeError,
    OAuth2Error,
    UnsupportedGrantTypeError,
    UnsupportedResponseTypeError,
)
from authlib.oauth2.rfc7636.challenge import CODE_CHALLENGE_PATTERN, CODE_VERIFIER_PATTERN, create_s256_code_challenge
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.admin.audit import Actor, Target, audit
from fable_core.admin.instance import public_url
from fable_core.config import Settings
from fable_core.db.models import OAuthClient, OAuthCode, OAuthGrant, OAuthToken, User
from fable_core.errors import InvalidInput, Unauthenticated, Unavailable
from fable_core.identity.oauth.clients import get_client, redirect_allowed
from fable_core.identity.revocations import announce
from fable_core.tools.access import of_user
from fable_core.tools.caller import Caller, Scope, Surface

__all__ = [
    "ACCESS_PREFIX", "AuthorizationRequest", "InvalidTargetError", "Redirected", "Refusal", "approve",
    "caller_for_token", "check_authorization", "issue_code", "issuer", "proves_client", "redirect_uri_for",
    "remembered",
    "resources", "revoke_token", "server_metadata", "token_response",
]

ACCESS_PREFIX = "fat_"
REFRESH_PREFIX = "frt_"
SCOPES: tuple[Scope, ...] = ("read", "write")
_STAMP_EVERY = timedelta(seconds=60)


class InvalidTargetError(OAuth2Error):  # type: ignore[misc]
    """RFC 8707 §2: the resource asked for is not this server's."""

    error = "invalid_target"


@dataclass(frozen=True, slots=True)
class AuthorizationRequest:
    """A checked authorization request: whom to redirect to, and what is asked."""

    client: OAuthClient
    redirect_uri: str
    state: str | None
    code_challenge: str
    scope: Scope
    resource: str


class Redirected(Exception):
    """An authorization request that is refused by redirecting to the client with ``error``."""

    def __init__(self, error: OAuth2Error, redirect_uri: str, state: str | None) -> None:
        super().__init__(error.description)
        self.error = error
        self.location = add_params_to_uri(redirect_uri, [(k, v) for k, v in error.get_body() if k != "state"]
                                          + ([("state", state)] if state else []))


@dataclass(frozen=True, slots=True)
class Refusal:
    """A token-endpoint refusal, returned so what it did commits before it is sent."""

    error: OAuth2Error


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def scope_text(scope: str) -> str:
    return "read write" if scope == "write" else "read"


def parse_scope(raw: str | None, default: Scope = "read") -> Scope:
    """``read``, ``write`` or both (space-separated, any order) → the caller scope; ValueError else."""
    asked = set((raw or "").split())
    if not asked:
        return default
    unknown = asked - set(SCOPES)
    if unknown:
        raise ValueError(f"unknown scope {min(unknown)[:50]!r}: use read, write or both")
    return "write" if "write" in asked else "read"


async def issuer(session: AsyncSession, settings: Settings) -> str:
    """This authorization server's issuer: the public URL; Unavailable while there is none."""
    if not settings.fable_oauth_enabled:
        raise Unavailable("the OAuth authorization server is turned off (FABLE_OAUTH_ENABLED=false)")
    url, _ = await public_url(session, settings)
    if url is None:
        raise Unavailable("OAuth needs this Fable's public URL: set FABLE_BASE_URL (docs/oauth.md)")
    return url


def resources(public: str) -> tuple[str, ...]:
    """The resource identifiers (RFC 8707) that name this Fable; the first is the default."""
    return f"{public}/mcp", public, f"{public}/"


def server_metadata(public: str, *, registration: bool) -> dict[str, Any]:
    """RFC 8414 authorization server metadata."""
    meta: dict[str, Any] = {
        "issuer": public,
        "authorization_endpoint": f"{public}/oauth/authorize",
        "token_endpoint": f"{public}/oauth/token",
        "revocation_endpoint": f"{public}/oauth/revoke",
        "scopes_supported": list(SCOPES),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "code_challenge_methods_supported": ["S256"],
        "client_id_metadata_document_supported": True,
        "service_documentation": f"{public}/docs/oauth.md",
    }
    if registration:
        meta["registration_endpoint"] = f"{public}/oauth/register"
    return meta


async def check_authorization(session: AsyncSession, settings: Settings,
                              params: Mapping[str, str]) -> AuthorizationRequest:
    """The checked request; InvalidInput when the client or redirect URI is wrong (shown, never
    redirected to), :class:`Redirected` for other faults."""
    public = await issuer(session, settings)
    client = await get_client(session, params.get("client_id"))
    if client is None:
        raise InvalidInput("unknown or disabled OAuth client_id", field="client_id", oauth_error="invalid_client")
    redirect_uri = params.get("redirect_uri")
    if redirect_uri is None or not redirect_allowed(client, redirect_uri):
        raise InvalidInput("redirect_uri is not one this client registered", field="redirect_uri",
                           oauth_error="invalid_request")
    state = params.get("state") or None
    if state is not None and len(state) > 1000:
        raise Redirected(InvalidRequestError(description="state is longer than 1000 characters"), redirect_uri, None)
    if params.get("response_type") != "code":
        raise Redirected(UnsupportedResponseTypeError((params.get("response_type") or "")[:50]), redirect_uri, state)
    challenge = params.get("code_challenge") or ""
    if params.get("code_challenge_method") != "S256" or not CODE_CHALLENGE_PATTERN.match(challenge):
        raise Redirected(InvalidRequestError(description="PKCE is required: a code_challenge with "
                                                         "code_challenge_method=S256"), redirect_uri, state)
    try:
        scope = parse_scope(params.get("scope"))
    except ValueError as e:
        raise Redirected(InvalidScopeError(description=str(e)), redirect_uri, state) from e
    resource = params.get("resource") or resources(public)[0]
    if resource not in resources(public):
        raise Redirected(InvalidTargetError(description=f"resource must be {resources(public)[0]}"),
                         redirect_uri, state)
    return AuthorizationRequest(client, redirect_uri, state, challenge, scope, resource)


def proves_client(request: AuthorizationRequest) -> bool:
    """Whether the redirect URI proves the client is who registered (an ``https`` URL, which only
    its site can receive). A loopback port or a private-use scheme can be claimed by any local
    app using the client's public id, so such a request always asks the person again, however
    often they approved the client (RFC 8252 §8.6)."""
    return urlsplit(request.redirect_uri).scheme == "https"


async def remembered(session: AsyncSession, user_id: int, request: AuthorizationRequest) -> OAuthGrant | None:
    """The person's approval of this client, if it covers what is asked now."""
    grant: OAuthGrant | None = await session.scalar(select(OAuthGrant).where(
        of_user(OAuthGrant, user_id), OAuthGrant.client_ref == request.client.id))
    if grant is None or (request.scope == "write" and grant.scope != "write"):
        return None
    return grant


async def approve(session: AsyncSession, person: Actor, request: AuthorizationRequest) -> OAuthGrant:
    """Record (and audit) the approval of ``person``, signed in (widening an earlier one to
    ``write`` if asked)."""
    assert person.account_id is not None, "a person approves, in their own account"
    user_id = person.account_id
    grant: OAuthGrant | None = await session.scalar(select(OAuthGrant).where(
        of_user(OAuthGrant, user_id), OAuthGrant.client_ref == request.client.id).with_for_update())
    if grant is None:
        grant = OAuthGrant(user_id=user_id, client_ref=request.client.id, scope=request.scope)
        session.add(grant)
    elif request.scope == "write":
        grant.scope = "write"
    await session.flush()
    await audit(session, person, "oauth.connection.approve",
                Target("oauth_connection", grant.id, request.client.client_name[:100]),
                client_id=request.client.client_id, scope=request.scope)
    return grant


async def issue_code(session: AsyncSession, settings: Settings, grant: OAuthGrant,
                     request: AuthorizationRequest) -> str:
    """A new authorization code for ``request``; the URL to send the person back to with it."""
    code = secrets.token_urlsafe(32)
    session.add(OAuthCode(
        grant_id=grant.id, code_hash=_hash(code), family=secrets.token_hex(16), redirect_uri=request.redirect_uri,
        code_challenge=request.code_challenge, scope=request.scope, resource=request.resource,
        expires_at=datetime.now(UTC) + timedelta(seconds=settings.fable_oauth_code_seconds)))
    await session.flush()
    return redirect_uri_for(request, code=code)


def redirect_uri_for(request: AuthorizationRequest, **params: str) -> str:
    """The client's redirect URI with ``params`` (and the request's state)."""
    pairs = list(params.items()) + ([("state", request.state)] if request.state else [])
    return str(add_params_to_uri(request.redirect_uri, pairs))


async def token_response(session: AsyncSession, settings: Settings,
                         form: Mapping[str, str]) -> dict[str, Any] | Refusal:
    """The token endpoint (authorization_code and refresh_token grants) for a public client."""
    client = await get_client(session, form.get("client_id"))
    if client is None:
        return Refusal(InvalidClientError(description="unknown or disabled client_id"))
    grant_type = form.get("grant_type")
    if grant_type == "authorization_code":
        return await _redeem_code(session, settings, client, form)
    if grant_type == "refresh_token":
        return await _refresh(session, settings, client, form)
    return Refusal(UnsupportedGrantTypeError((grant_type or "")[:50]))


async def _redeem_code(session: AsyncSession, settings: Settings, client: OAuthClient,
                       form: Mapping[str, str]) -> dict[str, Any] | Refusal:
    row = (await session.execute(
        select(OAuthCode, OAuthGrant).join(OAuthGrant, OAuthGrant.id == OAuthCode.grant_id)
        .where(OAuthCode.code_hash == _hash(form.get("code") or "")).with_for_update(of=OAuthCode))).first()
    if row is None or row[1].client_ref != client.id:
        return Refusal(InvalidGrantError(description="unknown authorization code"))
    code, grant = row
    now = datetime.now(UTC)
    if code.used_at is not None:
        revoked = await _revoke_family(session, code.family, now)
        await _audit(session, client, grant, "oauth.code.replay", revoked_tokens=revoked)
        return Refusal(InvalidGrantError(description="this authorization code was already used; the tokens it "
                                                     "gave are revoked"))
    code.used_at = now
    verifier = form.get("code_verifier") or ""
    reason = ("expired" if code.expires_at <= now
              else "redirect_uri" if form.get("redirect_uri") != code.redirect_uri
              else "pkce" if not (CODE_VERIFIER_PATTERN.match(verifier) and hmac.compare_digest(
                  create_s256_code_challenge(verifier), code.code_challenge))
              else "resource" if form.get("resource") and form.get("resource") != code.resource
              else None)
    if reason is not None:
        await _audit(session, client, grant, "oauth.token.refused", reason=reason)
        if reason == "resource":
            return Refusal(InvalidTargetError(description=f"this code is for {code.resource}"))
        return Refusal(InvalidGrantError(description={
            "expired": "this authorization code has expired",
            "redirect_uri": "redirect_uri does not match the authorization request's",
            "pkce": "code_verifier does not match the code_challenge",
        }[reason]))
    return await _issue(session, settings, grant, code.family, code.scope, code.resource)  # type: ignore[arg-type]


async def _refresh(session: AsyncSession, settings: Settings, client: OAuthClient,
                   form: Mapping[str, str]) -> dict[str, Any] | Refusal:
    row = (await session.execute(
        select(OAuthToken, OAuthGrant).join(OAuthGrant, OAuthGrant.id == OAuthToken.grant_id)
        .where(OAuthToken.token_hash == _hash(form.get("refresh_token") or ""), OAuthToken.kind == "refresh")
        .with_for_update(of=OAuthToken))).first()
    if row is None or row[1].client_ref != client.id or row[0].revoked_at is not None:
        return Refusal(InvalidGrantError(description="unknown or revoked refresh token"))
    token, grant = row
    now = datetime.now(UTC)
    if token.used_at is not None:
        revoked = await _revoke_family(session, token.family, now)
        await _audit(session, client, grant, "oauth.refresh.reuse", revoked_tokens=revoked)
        return Refusal(InvalidGrantError(description="this refresh token was already used; every token of its "
                                                     "grant is revoked: authorize again"))
    if token.expires_at <= now:
        return Refusal(InvalidGrantError(description="this refresh token has expired"))
    if form.get("resource") and form.get("resource") != token.resource:
        await _audit(session, client, grant, "oauth.token.refused", reason="resource")
        return Refusal(InvalidTargetError(description=f"this refresh token is for {token.resource}"))
    try:
        scope = parse_scope(form.get("scope"), default=token.scope)  # type: ignore[arg-type]
    except ValueError as e:
        return Refusal(InvalidScopeError(description=str(e)))
    if scope == "write" and token.scope != "write":
        return Refusal(InvalidScopeError(description="a refresh cannot widen the scope"))
    token.used_at = now
    return await _issue(session, settings, grant, token.family, scope, token.resource)


async def _issue(session: AsyncSession, settings: Settings, grant: OAuthGrant, family: str, scope: Scope,
                 resource: str) -> dict[str, Any]:
    access = ACCESS_PREFIX + secrets.token_urlsafe(32)
    refresh = REFRESH_PREFIX + secrets.token_urlsafe(32)
    now = datetime.now(UTC)
    lifetime = settings.fable_oauth_access_token_seconds
    session.add_all([
        OAuthToken(grant_id=grant.id, kind="access", token_hash=_hash(access), family=family, scope=scope,
                   resource=resource, expires_at=now + timedelta(seconds=lifetime)),
        OAuthToken(grant_id=grant.id, kind="refresh", token_hash=_hash(refresh), family=family, scope=scope,
                   resource=resource, expires_at=now + timedelta(days=settings.fable_oauth_refresh_token_days)),
    ])
    await session.flush()
    return {"access_token": access, "token_type": "Bearer", "expires_in": lifetime, "refresh_token": refresh,
            "scope": scope_text(scope)}


async def _revoke_family(session: AsyncSession, family: str, now: datetime) -> int:
    result = await session.execute(update(OAuthToken).where(
        OAuthToken.family == family, OAuthToken.revoked_at.is_(None)).values(revoked_at=now))
    revoked = int(result.rowcount)  # type: ignore[attr-defined]
    if revoked:
        await announce(session, "oauth token family")
    return revoked


async def _audit(session: AsyncSession, client: OAuthClient, grant: OAuthGrant, action: str, **details: Any) -> None:
    actor = Actor(grant.user_id, f"oauth:{client.client_name}"[:64], "rest")
    await audit(session, actor, action, Target("oauth_connection", grant.id, client.client_name[:100]),
                client_id=client.client_id, **details)


async def revoke_token(session: AsyncSession, form: Mapping[str, str]) -> Refusal | None:
    """RFC 7009: revoke the token if it is this client's (a refresh token with its family); an
    unknown token is not an error."""
    client = await get_client(session, form.get("client_id"))
    if client is None:
        return Refusal(InvalidClientError(description="unknown or disabled client_id"))
    row = (await session.execute(
        select(OAuthToken).join(OAuthGrant, OAuthGrant.id == OAuthToken.grant_id)
        .where(OAuthToken.token_hash == _hash(form.get("token") or ""), OAuthGrant.client_ref == client.id))).first()
    if row is None:
        return None
    token = row[0]
    now = datetime.now(UTC)
    if token.kind == "refresh":
        await _revoke_family(session, token.family, now)
    elif token.revoked_at is None:
        token.revoked_at = now
        await announce(session, "oauth token")
    await session.flush()
    return None


async def caller_for_token(session: AsyncSession, settings: Settings, token: str, surface: Surface) -> Caller:
    """The caller an access token stands for; Unauthenticated if it is unknown, expired,
    revoked, its client disabled, or it was issued for another resource (RFC 8707)."""
    now = datetime.now(UTC)
    row = (await session.execute(
        select(OAuthToken, OAuthGrant, User)
        .join(OAuthGrant, OAuthGrant.id == OAuthToken.grant_id)
        .join(OAuthClient, OAuthClient.id == OAuthGrant.client_ref)
        .join(User, User.id == OAuthGrant.user_id)
        .where(OAuthToken.token_hash == _hash(token), OAuthToken.kind == "access", OAuthToken.revoked_at.is_(None),
               OAuthToken.expires_at > now, OAuthClient.disabled_at.is_(None), User.is_active.is_(True)))).first()
    if row is None or not settings.fable_oauth_enabled:
        raise Unauthenticated("invalid, expired or revoked access token")
    access, grant, user = row
    public, _ = await public_url(session, settings)
    if public is None or access.resource not in resources(public):
        raise Unauthenticated(f"this access token is for another resource ({access.resource[:200]})")
    if grant.last_used_at is None or now - grant.last_used_at > _STAMP_EVERY:
        await session.execute(update(OAuthGrant).where(OAuthGrant.id == grant.id).values(last_used_at=now))
    return Caller(user_id=user.id, username=user.username, scope=access.scope,  # type: ignore[arg-type]
                  surface=surface, role=user.role, credential="oauth",
                  toolsets=None if grant.toolsets is None else tuple(grant.toolsets))
