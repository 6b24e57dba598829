"""The account endpoints that cannot be tools: each one starts, ends or needs no session (so it
sets or clears the session cookie, or answers before anyone signs in): register, sign in and
out, forgot and reset a password, verify an address by its mailed token, whether registration
is open.

Sign-in starts a server-side session (:mod:`fable_core.identity.login_sessions`) held by an HttpOnly
cookie; the response carries the session's CSRF token for clients that cannot send a
same-origin ``Origin`` header. Password-checking endpoints are rate-limited per address and per
account (:mod:`fable_web.ratelimit`). The domain rules (first user is admin, invitations,
single-use tokens, verified addresses) and what is audited live in the core
(:mod:`fable_core.identity.accounts`, :mod:`fable_core.identity.sign_in`); this module only
translates HTTP. What a signed-in person does to their own account (``/api/auth/me``, password,
email, sessions) is a tool: :mod:`fable_core.identity.me`, :mod:`fable_core.identity.sessions`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.requests import Request
from starlette.responses import Response

from fable_core.admin import instance
from fable_core.errors import Forbidden, Unavailable
from fable_core.identity import accounts, login_sessions
from fable_core.identity.account_mail import reset_later, verification_later
from fable_core.identity.me import require_local_auth
from fable_core.identity.passwords import hashed
from fable_core.identity.sign_in import sign_in
from fable_core.identity.types import Email, Password, Token, Username
from fable_core.identity.views import Message, SignedIn, UserResult, UserView
from fable_mcp.hosts import HostPolicy
from fable_web.context import web
from fable_web.payload import parse_model, read_json_object
from fable_web.rest import model_response
from fable_web.routing import ApiRoute, Doc
from fable_web.security import is_same_origin
from fable_web.sessions import DEVICE_COOKIE

__all__ = ["local_auth_required", "refuse_cross_site", "routes"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Credentials(_Body):
    username: Username
    password: Password


class Registration(Credentials):
    email: Email | None = None
    invitation: Token | None = Field(None, description="Invitation token, when registration is closed.")


class Logout(_Body):
    everywhere: bool = Field(False, description="End every session of the account, not only this one.")


class ForgotPassword(_Body):
    username: Username | None = None
    email: Email | None = None

    @model_validator(mode="after")
    def _one_of(self) -> ForgotPassword:
        if not (self.username or self.email):
            raise ValueError("give a username or an email")
        return self


class ResetPassword(_Body):
    token: Token
    password: Password


class EmailToken(_Body):
    token: Token


class RegistrationStatus(BaseModel):
    open: bool = Field(description="Whether the sign-up form may be used now.")
    mode: Literal["open", "invite", "closed"]
    first_user: bool = Field(description="No account yet: this one becomes the admin.")


def local_auth_required(request: Request) -> None:
    """Forbidden when password sign-in and registration are turned off (LOCAL_AUTH_ENABLED)."""
    require_local_auth(web(request).fable.settings)


def refuse_cross_site(request: Request) -> None:
    """Unauthenticated forms (login, register) still refuse other sites' pages."""
    if "origin" in request.headers and not is_same_origin(request, web(request).fable.settings.fable_base_url):
        raise Forbidden("cross-site request refused", reason="csrf")


async def _signed_in(request: Request, user: Any, status: int = 200) -> Response:
    """Start a session for ``user`` and answer with it (cookie + CSRF token)."""
    w = web(request)
    async with w.fable.db.transaction() as session:
        started = await login_sessions.start_session(
            session, user.id, user_agent=request.headers.get("user-agent", ""), ip=w.limiter.ip(request))
    response = model_response(SignedIn(user=UserView.of(user), csrf_token=started.csrf), status)
    w.sessions.attach(response, started.token)
    w.sessions.remember(response, user.username)
    return response


async def register(request: Request) -> Response:
    local_auth_required(request)
    refuse_cross_site(request)
    body = parse_model(Registration, await read_json_object(request))
    w = web(request)
    await w.limiter.hit(request, "register")
    password = await hashed(body.password)  # before the transaction: no connection waits on the hasher
    async with w.fable.db.transaction() as session:
        user = await accounts.register_user(
            session, body.username, password, email=body.email, invitation=body.invitation,
            settings=w.fable.settings,
        )
        await session.refresh(user, ["created_at"])
        if user.role == "admin" and not HostPolicy(w.fable.settings).any_host:
            # The first admin reached us at a Host the policy admits: links in mail go there
            # until FABLE_BASE_URL is set or an admin changes it.
            await instance.pin_public_url(session, str(request.base_url))
    response = await _signed_in(request, user, 201)
    verification_later(w.fable.mailer, user.id)
    return response


async def login(request: Request) -> Response:
    local_auth_required(request)
    refuse_cross_site(request)
    body = parse_model(Credentials, await read_json_object(request))
    w = web(request)
    known = w.sessions.knows(request.cookies.get(DEVICE_COOKIE), body.username)  # not locked out by strangers
    await w.limiter.hit(request, "login", account=None if known else body.username)
    user = await sign_in(w.fable.db, body.username, body.password, ip=w.limiter.ip(request))
    return await _signed_in(request, user)


async def logout(request: Request) -> Response:
    """End this session (or, with ``everywhere``, all of the account's) and clear the cookie.
    Without a live session there is nothing to end: the cookie is cleared all the same."""
    w = web(request)
    body = parse_model(Logout, await read_json_object(request))
    info = await w.auth.current(request)
    if info is not None:
        w.auth.check_csrf(request, info)
        async with w.fable.db.transaction() as session:  # announced: forgotten here as it commits
            if body.everywhere:
                await login_sessions.end_all(session, info.user_id)
            else:
                await login_sessions.end_session(session, info.user_id, info.id)
    response = Response(status_code=204)
    w.sessions.clear(response)
    return response


async def forgot_password(request: Request) -> Response:
    """Always 202 with the same body, at once: whether the account exists, has a verified
    address, or the mail server is up is nobody's business here (see :mod:`fable_web.mail`)."""
    local_auth_required(request)
    refuse_cross_site(request)
    body = parse_model(ForgotPassword, await read_json_object(request))
    w = web(request)
    login = body.email or body.username or ""
    await w.limiter.hit(request, "forgot_password")
    if not await w.fable.mailer.configured():
        raise Unavailable("password reset by email is not available on this instance; ask its admin")
    if not w.sessions.knows(request.cookies.get(DEVICE_COOKIE), login):
        await w.limiter.count("forgot_password_account", login.strip().lower())
    reset_later(w.fable.mailer, login)
    return model_response(
        Message(message="if an account with that name or a verified email exists, a reset link was sent"), 202)


async def reset_password(request: Request) -> Response:
    local_auth_required(request)
    refuse_cross_site(request)
    body = parse_model(ResetPassword, await read_json_object(request))
    w = web(request)
    await w.limiter.hit(request, "reset_password")
    password = await hashed(body.password)
    async with w.fable.db.transaction() as session:  # its sessions end, announced: forgotten here as it commits
        user = await accounts.reset_password(session, body.token, password)
        await session.refresh(user, ["created_at"])
    return model_response(UserResult(user=UserView.of(user)))


async def verify_email(request: Request) -> Response:
    refuse_cross_site(request)
    body = parse_model(EmailToken, await read_json_object(request))
    w = web(request)
    await w.limiter.hit(request, "verify_email")
    async with w.fable.db.transaction() as session:
        user = await accounts.verify_email(session, body.token)
        await session.refresh(user, ["created_at"])
    return model_response(UserResult(user=UserView.of(user)))


async def registration_status(request: Request) -> Response:
    """Public: whether the sign-up form should be offered (``mode``: ``open``, ``invite`` or
    ``closed``; ``open`` says whether anyone may sign up now), and whether this is the first user."""
    w = web(request)
    async with w.fable.db.reading() as session:
        users = await accounts.count_users(session)
        mode = await instance.registration_mode(session, w.fable.settings)
    return model_response(RegistrationStatus(open=mode == "open" or not users, mode=mode if users else "open",
                                             first_user=not users))


routes = [
    ApiRoute("/api/auth/register", register, methods=["POST"],
             doc=Doc("Create an account and sign in", "auth", Registration, status=201, public=True, result=SignedIn)),
    ApiRoute("/api/auth/login", login, methods=["POST"],
             doc=Doc("Sign in (starts a cookie session)", "auth", Credentials, public=True, result=SignedIn)),
    ApiRoute("/api/auth/logout", logout, methods=["POST"],
             doc=Doc("Sign out: end this session (or every one) and clear the cookie", "auth", Logout,
                     status=204, public=True, body_required=False)),
    ApiRoute("/api/auth/forgot-password", forgot_password, methods=["POST"],
             doc=Doc("Email a password reset link", "auth", ForgotPassword, status=202, public=True, result=Message)),
    ApiRoute("/api/auth/reset-password", reset_password, methods=["POST"],
             doc=Doc("Set a new password with a reset token", "auth", ResetPassword, public=True, result=UserResult)),
    ApiRoute("/api/auth/verify-email", verify_email, methods=["POST"],
             doc=Doc("Confirm an email address with the mailed token", "auth", EmailToken, public=True,
                     result=UserResult)),
    ApiRoute("/api/auth/registration", registration_status, methods=["GET"],
             doc=Doc("Whether registration is open", "auth", public=True, result=RegistrationStatus)),
]
