"""Account endpoints under /api/auth: register, sign in and out, who am I, passwords.

Sign-in starts a cookie session (see :mod:`fable_web.sessions`); the response carries the
session's CSRF token for clients that cannot send a same-origin ``Origin`` header. The domain
rules (first user is admin, invitations, single-use reset tokens, session_version) live in
:mod:`fable_core.accounts`; this module only translates HTTP.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator
from sqlalchemy import func, select
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fable_core import accounts
from fable_core.db.models import User
from fable_core.errors import Forbidden, Unavailable
from fable_web.context import base_url, web
from fable_web.payload import parse_model, read_json_object
from fable_web.security import is_same_origin
from fable_web.sessions import COOKIE

__all__ = ["REQUEST_MODELS", "routes", "user_json"]

Username = Annotated[str, StringConstraints(min_length=1, max_length=64)]
Password = Annotated[str, StringConstraints(min_length=1, max_length=1024)]
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


REQUEST_MODELS: dict[str, type[BaseModel]] = {
    "register": Registration,
    "login": Credentials,
    "change_password": PasswordChange,
    "forgot_password": ForgotPassword,
    "reset_password": ResetPassword,
}


def user_json(user: User) -> dict[str, Any]:
    return {
        "id": user.id,
        "username": user.username,
        "email": user.email,
        "role": user.role,
        "created_at": user.created_at.isoformat() if user.created_at else None,
    }


def refuse_cross_site(request: Request) -> None:
    """Unauthenticated forms (login, register) still refuse other sites' pages."""
    if "origin" in request.headers and not is_same_origin(request, web(request).fable.settings.fable_base_url):
        raise Forbidden("cross-site request refused", reason="csrf")


def _start_session(request: Request, user: User, status: int = 200) -> JSONResponse:
    codec = web(request).sessions
    session = codec.start(user.id, user.session_version)
    response = JSONResponse({"user": user_json(user), "csrf_token": session.csrf}, status_code=status)
    codec.attach(response, session)
    return response


async def register(request: Request) -> Response:
    refuse_cross_site(request)
    body = parse_model(Registration, await read_json_object(request))
    w = web(request)
    await w.limiter.hit(request, "register")
    async with w.fable.db.transaction() as session:
        user = await accounts.register_user(
            session, body.username, body.password, email=body.email, invitation=body.invitation,
            open_by_default=w.fable.settings.fable_open_registration,
        )
        await session.refresh(user, ["created_at", "session_version"])
    return _start_session(request, user, 201)


async def login(request: Request) -> Response:
    refuse_cross_site(request)
    body = parse_model(Credentials, await read_json_object(request))
    w = web(request)
    await w.limiter.hit(request, "login")
    async with w.fable.db.transaction() as session:
        user = await accounts.authenticate(session, body.username, body.password)
    return _start_session(request, user)


async def logout(request: Request) -> Response:
    response = Response(status_code=204)
    web(request).sessions.clear(response)
    return response


async def me(request: Request) -> Response:
    w = web(request)
    caller = await w.auth.caller(request)
    async with w.fable.db.transaction() as session:
        user = await session.get(User, caller.user_id)
    session_ = w.sessions.decode(request.cookies.get(COOKIE))
    via_key = "authorization" in request.headers
    return JSONResponse({
        "user": user_json(user) if user else None,
        "auth": "api_key" if via_key else "session",
        "scope": caller.scope,
        "csrf_token": None if via_key or session_ is None else session_.csrf,
    })


async def change_password(request: Request) -> Response:
    w = web(request)
    caller = await w.auth.caller(request)
    body = parse_model(PasswordChange, await read_json_object(request))
    async with w.fable.db.transaction() as session:
        user = await accounts.change_password(
            session, caller.user_id, body.current_password, body.new_password
        )
        await session.refresh(user, ["created_at"])
    w.auth.forget_user(user.id)
    return _start_session(request, user)


async def forgot_password(request: Request) -> Response:
    refuse_cross_site(request)
    body = parse_model(ForgotPassword, await read_json_object(request))
    w = web(request)
    await w.limiter.hit(request, "forgot_password")
    if not w.mailer.configured:
        raise Unavailable("password reset by email is not available: no SMTP server is configured")
    async with w.fable.db.transaction() as session:
        found = await accounts.request_password_reset(session, body.email or body.username or "")
        if found is not None:
            user, token = found
            link = f"{base_url(request)}/reset-password?token={token}"
            await w.mailer.send(
                user.email or "", "Reset your Fable password",
                f"Someone asked to reset the password of {user.username!r} on Fable.\n\n"
                f"To choose a new password, open this link within an hour:\n{link}\n\n"
                "If it was not you, ignore this message: your password stays as it is.\n",
            )
    return JSONResponse(
        {"message": "if an account with that name or email exists, a reset link was sent"},
        status_code=202,
    )


async def reset_password(request: Request) -> Response:
    refuse_cross_site(request)
    body = parse_model(ResetPassword, await read_json_object(request))
    w = web(request)
    await w.limiter.hit(request, "reset_password")
    async with w.fable.db.transaction() as session:
        user = await accounts.reset_password(session, body.token, body.password)
        await session.refresh(user, ["created_at"])
    w.auth.forget_user(user.id)
    return JSONResponse({"user": user_json(user)})


async def registration_status(request: Request) -> Response:
    """Public: whether the sign-up form should be offered, and whether this is the first user."""
    w = web(request)
    async with w.fable.db.transaction() as session:
        users = await session.scalar(select(func.count(User.id)))
        is_open = await accounts.registration_open(session, w.fable.settings.fable_open_registration)
    return JSONResponse({"open": bool(is_open or not users), "first_user": not users})


routes = [
    Route("/api/auth/register", register, methods=["POST"]),
    Route("/api/auth/login", login, methods=["POST"]),
    Route("/api/auth/logout", logout, methods=["POST"]),
    Route("/api/auth/me", me, methods=["GET"]),
    Route("/api/auth/password", change_password, methods=["POST"]),
    Route("/api/auth/forgot-password", forgot_password, methods=["POST"]),
    Route("/api/auth/reset-password", reset_password, methods=["POST"]),
    Route("/api/auth/registration", registration_status, methods=["GET"]),
]
