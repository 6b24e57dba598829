"""Account endpoints under /api/auth: register, sign in and out, sessions, passwords, email.

Sign-in starts a server-side session (:mod:`fable_core.identity.login_sessions`) held by an HttpOnly
cookie; the response carries the session's CSRF token for clients that cannot send a
same-origin ``Origin`` header. Everything that manages credentials needs that session: an API
key is refused there. Password-checking endpoints are rate-limited per address and per account
(:mod:`fable_web.ratelimit`). The domain rules (first user is admin, invitations, single-use
tokens, verified addresses) live in :mod:`fable_core.identity.accounts`; this module only translates HTTP.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from fable_core.admin import instance
from fable_core.admin.audit import Actor, audit
from fable_core.errors import Forbidden, InvalidInput, Unauthenticated, Unavailable
from fable_core.identity import accounts, login_sessions
from fable_core.identity.passwords import MAX_LENGTH, hashed
from fable_mcp.hosts import HostPolicy
from fable_web.context import WebContext, web
from fable_web.payload import parse_model, read_json_object
from fable_web.routing import ApiRoute, Doc
from fable_web.security import is_same_origin
from fable_web.sessions import DEVICE_COOKIE

__all__ = ["routes"]

Username = Annotated[str, StringConstraints(min_length=1, max_length=64)]
Password = Annotated[str, StringConstraints(min_length=1, max_length=MAX_LENGTH)]
Email = Annotated[str, StringConstraints(strip_whitespace=True, max_length=320, pattern=r"^[^@\s]+@[^@\s]+$")]
Token = Annotated[str, StringConstraints(min_length=1, max_length=200)]


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


class PasswordChange(_Body):
    current_password: Password
    new_password: Password


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


class EmailChange(_Body):
    password: Password | None = Field(None, description="The current password; an account without one (OIDC "
                                      "sign-in only) leaves it out and must have signed in within 10 minutes.")
    email: Email | None = Field(description="The new address (it starts unverified), or null for none.")


class EmailToken(_Body):
    token: Token




def local_auth_required(request: Request) -> None:
    """Forbidden when password sign-in and registration are turned off (LOCAL_AUTH_ENABLED)."""
    settings = web(request).fable.settings
    if not settings.local_auth_enabled:
        other = f": sign in with {settings.oidc_name}" if settings.oidc_issuer else ""
        raise Forbidden(f"password sign-in and registration are turned off on this instance "
                        f"(LOCAL_AUTH_ENABLED=false){other}", reason="local_auth_disabled")


def refuse_cross_site(request: Request) -> None:
    """Unauthenticated forms (login, register) still refuse other sites' pages."""
    if "origin" in request.headers and not is_same_origin(request, web(request).fable.settings.fable_base_url):
        raise Forbidden("cross-site request refused", reason="csrf")


async def _signed_in(request: Request, user: Any, status: int = 200) -> JSONResponse:
    """Start a session for ``user`` and answer with it (cookie + CSRF token)."""
    w = web(request)
    async with w.fable.db.transaction() as session:
        started = await login_sessions.start_session(
            session, user.id, user_agent=request.headers.get("user-agent", ""), ip=w.limiter.ip(request))
    response = JSONResponse({"user": accounts.user_view(user), "csrf_token": started.csrf}, status_code=status)
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
    response.background = _verification_mail(w, user.id)
    return response


async def login(request: Request) -> Response:
    local_auth_required(request)
    refuse_cross_site(request)
    body = parse_model(Credentials, await read_json_object(request))
    w = web(request)
    known = w.sessions.knows(request.cookies.get(DEVICE_COOKIE), body.username)  # not locked out by strangers
    await w.limiter.hit(request, "login", account=None if known else body.username)
    try:
        user = await accounts.authenticate(w.fable.db, body.username, body.password)
        async with w.fable.db.transaction() as session:
            await audit(session, Actor(user.id, user.username, "web"), "auth.sign_in", ip=w.limiter.ip(request))
    except Unauthenticated:
        async with w.fable.db.transaction() as session:  # the name tried, never the password
            await audit(session, Actor(None, body.username[:64], "web"), "auth.sign_in_failed",
                        ip=w.limiter.ip(request))
        raise
    return await _signed_in(request, user)


async def logout(request: Request) -> Response:
    """End this session (or, with ``everywhere``, all of the account's) and clear the cookie.
    Without a live session there is nothing to end: the cookie is cleared all the same."""
    w = web(request)
    body = parse_model(Logout, await read_json_object(request))
    info = await w.auth.current(request)
    if info is not None:
        w.auth.check_csrf(request, info)
        async with w.fable.db.transaction() as session:
            if body.everywhere:
                await login_sessions.end_all(session, info.user_id)
            else:
                await login_sessions.end_session(session, info.user_id, info.id)
        w.auth.forget_user(info.user_id)
    response = Response(status_code=204)
    w.sessions.clear(response)
    return response


async def me(request: Request) -> Response:
    w = web(request)
    caller = await w.auth.caller(request)
    async with w.fable.db.reading() as session:
        user = await accounts.get_user(session, caller.user_id)
    via_key = "authorization" in request.headers
    info = None if via_key else await w.auth.current(request)
    return JSONResponse({
        "user": accounts.user_view(user),
        "auth": "api_key" if via_key else "session",
        "scope": caller.scope,
        "csrf_token": info.csrf if info else None,
    })


async def change_password(request: Request) -> Response:
    w = web(request)
    info = await w.auth.session(request)
    local_auth_required(request)
    body = parse_model(PasswordChange, await read_json_object(request))
    await w.limiter.hit(request, "password", account=info.user_id)
    new_password = await hashed(body.new_password)  # both checks before the transaction opens
    checked = await accounts.checked_password(w.fable.db, info.user_id, body.current_password)
    async with w.fable.db.transaction() as session:
        user = await accounts.change_password(session, info.user_id, checked, new_password, keep_session=info.id)
        await session.refresh(user, ["created_at"])
    w.auth.forget_user(user.id)
    return JSONResponse({"user": accounts.user_view(user)})


async def forgot_password(request: Request) -> Response:
    """Always 202 with the same body, at once: whether the account exists, has a verified
    address, or the mail server is up is nobody's business here (see :mod:`fable_web.mail`)."""
    local_auth_required(request)
    refuse_cross_site(request)
    body = parse_model(ForgotPassword, await read_json_object(request))
    w = web(request)
    login = body.email or body.username or ""
    await w.limiter.hit(request, "forgot_password")
    if not await w.mailer.configured():
        raise Unavailable("password reset by email is not available on this instance; ask its admin")
    if not w.sessions.knows(request.cookies.get(DEVICE_COOKIE), login):
        await w.limiter.count("forgot_password_account", login.strip().lower())
    response = JSONResponse(
        {"message": "if an account with that name or a verified email exists, a reset link was sent"},
        status_code=202,
    )
    response.background = w.mailer.later(lambda: _send_reset(w, login), "password reset mail")
    return response


async def _send_reset(w: WebContext, login: str) -> None:
    async with w.fable.db.transaction() as session:
        url, _ = await instance.public_url(session, w.fable.settings)
        if url is None:
            raise Unavailable("no public URL: set FABLE_BASE_URL, or the public URL in admin settings")
        found = await accounts.request_password_reset(session, login)
    if found is None:
        return
    user, token = found
    await w.mailer.send(
        user.email or "", "Reset your Fable password",
        f"Someone asked to reset the password of {user.username!r} on Fable.\n\n"
        f"To choose a new password, open this link within an hour:\n{url}/reset-password?token={token}\n\n"
        "If it was not you, ignore this message: your password stays as it is.\n",
    )


async def reset_password(request: Request) -> Response:
    local_auth_required(request)
    refuse_cross_site(request)
    body = parse_model(ResetPassword, await read_json_object(request))
    w = web(request)
    await w.limiter.hit(request, "reset_password")
    password = await hashed(body.password)
    async with w.fable.db.transaction() as session:
        user = await accounts.reset_password(session, body.token, password)
        await session.refresh(user, ["created_at"])
    w.auth.forget_user(user.id)
    return JSONResponse({"user": accounts.user_view(user)})


async def change_email(request: Request) -> Response:
    w = web(request)
    info = await w.auth.session(request)
    body = parse_model(EmailChange, await read_json_object(request))
    await w.limiter.hit(request, "password", account=info.user_id)
    checked = None if body.password is None else await accounts.checked_password(w.fable.db, info.user_id,
                                                                                   body.password)
    async with w.fable.db.transaction() as session:
        user = await accounts.change_email(session, info.user_id, checked, body.email, login_session=info.id)
        await session.refresh(user, ["created_at"])
    response = JSONResponse({"user": accounts.user_view(user)})
    response.background = _verification_mail(w, user.id)
    return response


async def send_verification(request: Request) -> Response:
    """Mail the account's unverified address a new verification link."""
    w = web(request)
    info = await w.auth.session(request)
    async with w.fable.db.reading() as session:
        user = await accounts.get_user(session, info.user_id)
    if not user.email or user.email_verified_at is not None:
        raise InvalidInput("the account has no unverified email address", field="email")
    if not await w.mailer.configured():
        raise Unavailable("this instance cannot send mail; ask its admin")
    await w.limiter.count("verification_mail", str(info.user_id))
    response = JSONResponse({"message": f"a verification link was sent to {user.email}"}, status_code=202)
    response.background = _verification_mail(w, user.id)
    return response


def _verification_mail(w: WebContext, user_id: int) -> Any:
    """After the response: a verification link for the account's unverified address, when there
    is one, a public URL and a mail server (else nothing, quietly)."""

    async def compose() -> None:
        if not await w.mailer.configured():
            return
        async with w.fable.db.transaction() as session:
            url, _ = await instance.public_url(session, w.fable.settings)
            user = await accounts.get_user(session, user_id)
            if url is None:
                return
            token = await accounts.request_email_verification(session, user)
        if token is not None and user.email:
            await w.mailer.send(
                user.email, "Confirm your email address for Fable",
                f"To confirm that {user.email} belongs to the Fable account {user.username!r}, open "
                f"this link within two days:\n{url}/verify-email?token={token}\n\n"
                "Until then, password reset links are not sent to this address. If you did not "
                "give this address to Fable, ignore this message.\n",
            )

    return w.mailer.later(compose, "email verification mail")


async def verify_email(request: Request) -> Response:
    refuse_cross_site(request)
    body = parse_model(EmailToken, await read_json_object(request))
    w = web(request)
    await w.limiter.hit(request, "verify_email")
    async with w.fable.db.transaction() as session:
        user = await accounts.verify_email(session, body.token)
        await session.refresh(user, ["created_at"])
    return JSONResponse({"user": accounts.user_view(user)})


async def list_sessions(request: Request) -> Response:
    w = web(request)
    info = await w.auth.session(request)
    async with w.fable.db.reading() as session:
        rows = await login_sessions.list_sessions(session, info.user_id)
    return JSONResponse({"items": [login_sessions.session_view(r, info.id) for r in rows]})


async def end_session(request: Request) -> Response:
    w = web(request)
    info = await w.auth.session(request)
    session_id = request.path_params["session_id"]
    async with w.fable.db.transaction() as session:
        await login_sessions.end_session(session, info.user_id, session_id)
    w.auth.forget_user(info.user_id)
    response = JSONResponse({"id": session_id, "deleted": True})
    if session_id == info.id:
        w.sessions.clear(response)
    return response


async def registration_status(request: Request) -> Response:
    """Public: whether the sign-up form should be offered (``mode``: ``open``, ``invite`` or
    ``closed``; ``open`` says whether anyone may sign up now), and whether this is the first user."""
    w = web(request)
    async with w.fable.db.reading() as session:
        users = await accounts.count_users(session)
        mode = await instance.registration_mode(session, w.fable.settings)
    return JSONResponse({"open": mode == "open" or not users, "mode": mode if users else "open",
                         "first_user": not users})


routes = [
    ApiRoute("/api/auth/register", register, methods=["POST"],
             doc=Doc("Create an account and sign in", "auth", Registration, status=201, public=True)),
    ApiRoute("/api/auth/login", login, methods=["POST"],
             doc=Doc("Sign in (starts a cookie session)", "auth", Credentials, public=True)),
    ApiRoute("/api/auth/logout", logout, methods=["POST"],
             doc=Doc("Sign out: end this session (or every one) and clear the cookie", "auth", Logout,
                     status=204, public=True, body_required=False)),
    ApiRoute("/api/auth/me", me, methods=["GET"], doc=Doc("The signed-in user and the session's CSRF token", "auth")),
    ApiRoute("/api/auth/password", change_password, methods=["POST"],
             doc=Doc("Change the password (ends every other session; session only)", "auth", PasswordChange,
                     session_only=True)),
    ApiRoute("/api/auth/forgot-password", forgot_password, methods=["POST"],
             doc=Doc("Email a password reset link", "auth", ForgotPassword, status=202, public=True)),
    ApiRoute("/api/auth/reset-password", reset_password, methods=["POST"],
             doc=Doc("Set a new password with a reset token", "auth", ResetPassword, public=True)),
    ApiRoute("/api/auth/email", change_email, methods=["PUT"],
             doc=Doc("Change the email address (it starts unverified; session only)", "auth", EmailChange,
                     session_only=True)),
    ApiRoute("/api/auth/email/verification", send_verification, methods=["POST"],
             doc=Doc("Mail a new verification link (session only)", "auth", status=202, session_only=True)),
    ApiRoute("/api/auth/verify-email", verify_email, methods=["POST"],
             doc=Doc("Confirm an email address with the mailed token", "auth", EmailToken, public=True)),
    ApiRoute("/api/auth/sessions", list_sessions, methods=["GET"],
             doc=Doc("Your signed-in sessions (session only)", "auth", session_only=True)),
    ApiRoute("/api/auth/sessions/{session_id:int}", end_session, methods=["DELETE"],
             doc=Doc("End one of your sessions (session only)", "auth", session_only=True)),
    ApiRoute("/api/auth/registration", registration_status, methods=["GET"],
             doc=Doc("Whether registration is open", "auth", public=True)),
]
