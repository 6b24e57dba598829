"""Sign-in with the configured OpenID Connect provider (:mod:`fable_core.identity.oidc`), and the public
list of the sign-in methods the login page offers.

``GET /auth/oidc/login`` sends the browser to the provider with the flow's state, nonce and PKCE
verifier kept in a signed cookie that lives ten minutes; ``GET /auth/oidc/callback`` checks
them, finds (or links, or creates) the account and starts the same session a password sign-in
starts. Both are browser pages: a failure sends the browser back to ``/login?error=<code>``, one
of :data:`ERROR_CODES` (``oidc_failed`` for anything else), which the login page turns into its
own message: a link cannot put words of its own on our page. The full reason goes to the log.
The redirect URI is the public URL (``FABLE_BASE_URL``, else the one an admin set) plus the
callback path, never a request's Host.
"""

from __future__ import annotations

import logging
from urllib.parse import urlencode

from itsdangerous import BadSignature, URLSafeTimedSerializer
from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from fable_core.admin import instance
from fable_core.errors import FableError, InvalidInput, Unauthenticated, Unavailable
from fable_core.identity import login_sessions, oidc
from fable_web.context import WebContext, web
from fable_web.rest import model_response
from fable_web.routing import ApiRoute, Doc

__all__ = ["ERROR_CODES", "browser_routes", "routes"]

_log = logging.getLogger(__name__)

_COOKIE = "fable_oidc"
_MAX_AGE = 600


def _signer(w: WebContext) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(w.fable.settings.secret_key(), salt="fable-oidc-flow")


async def _redirect_uri(w: WebContext) -> str:
    async with w.fable.db.reading() as session:
        url, _ = await instance.public_url(session, w.fable.settings)
    if url is None:
        raise Unavailable("sign-in with OIDC needs the public URL: set FABLE_BASE_URL", reason="oidc_not_configured")
    return url.rstrip("/") + oidc.CALLBACK_PATH


ERROR_CODES = frozenset({
    "oidc_not_configured",  # no provider configured, or no public URL for the callback
    "oidc_unavailable",  # the provider did not answer, or its discovery document or keys are unusable
    "oidc_expired",  # the flow's cookie is gone or too old: started elsewhere, or over ten minutes ago
    "oidc_state",  # the state sent back is not this flow's
    "oidc_response",  # the provider's answer has no code or state
    "oidc_denied",  # the provider did not sign the person in (they declined)
    "oidc_token",  # the provider refused the code, or its ID token is not valid
    "oidc_no_account",  # no account matches and OIDC_AUTO_CREATE is off
    "oidc_disabled",  # the account is disabled
})
"""What ``/login?error=`` may say after a failed OIDC sign-in (besides ``oidc_failed``)."""


def _code(error: FableError) -> str:
    reason = str(error.details.get("reason", ""))
    code = "oidc_disabled" if reason == "disabled" else reason
    return code if code in ERROR_CODES else "oidc_failed"


def _back_to_login(error: FableError) -> RedirectResponse:
    code = _code(error)
    _log.info("OIDC sign-in failed (%s): %s", code, error.message)
    response = RedirectResponse("/login?" + urlencode({"error": code}), status_code=303)
    response.delete_cookie(_COOKIE, path="/auth/oidc")
    return response


async def login(request: Request) -> Response:
    w = web(request)
    try:
        url, pending = await w.oidc.begin(await _redirect_uri(w))
    except FableError as e:
        return _back_to_login(e)
    response = RedirectResponse(url, status_code=303)
    response.set_cookie(_COOKIE, _signer(w).dumps(pending.dump()), max_age=_MAX_AGE, path="/auth/oidc",
                        httponly=True, samesite="lax", secure=w.sessions.secure)
    return response


async def callback(request: Request) -> Response:
    w = web(request)
    try:
        pending = _pending(w, request)
        query = request.query_params
        if "error" in query:
            said = query.get("error_description") or query["error"]
            raise Unauthenticated(f"the sign-in provider did not sign you in: {said[:200]}", reason="oidc_denied")
        state, code = query.get("state", ""), query.get("code", "")
        if not state or not code:
            raise InvalidInput("the provider's answer has no code or state: start again from the sign-in page",
                               reason="oidc_response")
        claims = await w.oidc.finish(await _redirect_uri(w), pending, state, code)
        async with w.fable.db.transaction() as session:
            user = await oidc.account_for(session, w.oidc.issuer, claims,
                                          auto_create=w.fable.settings.oidc_auto_create)
            started = await login_sessions.start_session(
                session, user.id, user_agent=request.headers.get("user-agent", ""), ip=w.limiter.ip(request))
    except FableError as e:
        return _back_to_login(e)
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(_COOKIE, path="/auth/oidc")
    w.sessions.attach(response, started.token)
    return response


def _pending(w: WebContext, request: Request) -> oidc.Pending:
    cookie = request.cookies.get(_COOKIE)
    try:
        pending = oidc.Pending.load(_signer(w).loads(cookie, max_age=_MAX_AGE)) if cookie else None
    except (BadSignature, ValueError, TypeError):
        pending = None
    if pending is None:
        raise Unauthenticated("this sign-in has expired or was started elsewhere: start again from the sign-in page",
                              reason="oidc_expired")
    return pending


class OidcMethod(BaseModel):
    name: str = Field(description="The provider's button label.")
    url: str = Field(description="Where the browser goes to sign in with it.")


class SignInMethods(BaseModel):
    password: bool = Field(description="The username and password form, and registration.")
    oidc: OidcMethod | None = Field(None, exclude_if=lambda v: v is None, description="When a provider is configured.")


async def methods(request: Request) -> Response:
    """Public: how one signs in here (``password``: the username and password form and
    registration; ``oidc``: the provider's button label and URL, when one is configured)."""
    w = web(request)
    provider = OidcMethod(name=w.fable.settings.oidc_name, url=oidc.LOGIN_PATH) if w.oidc.configured else None
    return model_response(SignInMethods(password=w.fable.settings.local_auth_enabled, oidc=provider))


routes = [
    ApiRoute("/api/auth/methods", methods, methods=["GET"],
             doc=Doc("How to sign in: password, and the OIDC provider when configured", "auth", public=True,
                     result=SignInMethods)),
]
browser_routes = [
    Route(oidc.LOGIN_PATH, login, methods=["GET"]),
    Route(oidc.CALLBACK_PATH, callback, methods=["GET"]),
]
