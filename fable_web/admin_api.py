"""Admin endpoints under /api/admin: instance settings (registration, public URL), invitation
links, and accounts (list, disable, enable). All of them need an admin's signed-in session."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, StringConstraints
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from fable_core import accounts, instance
from fable_core.errors import Forbidden
from fable_core.login_sessions import SessionInfo
from fable_web.account_api import Email
from fable_web.context import base_url, web
from fable_web.payload import parse_model, read_json_object
from fable_web.routing import ApiRoute, Doc

__all__ = ["routes"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RegistrationSetting(_Body):
    open: bool


class InstanceSettings(_Body):
    registration_open: bool | None = None
    public_url: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)] | None = None


class NewInvitation(_Body):
    email: Email | None = None


class AccountState(_Body):
    is_active: bool




async def _admin(request: Request) -> SessionInfo:
    info = await web(request).auth.session(request)
    if info.role != "admin":
        raise Forbidden("only an admin may do this")
    return info


async def get_registration(request: Request) -> Response:
    await _admin(request)
    w = web(request)
    async with w.fable.db.reading() as session:
        is_open = await instance.registration_open(session, w.fable.settings.fable_open_registration)
    return JSONResponse({"open": is_open})


async def set_registration(request: Request) -> Response:
    await _admin(request)
    body = parse_model(RegistrationSetting, await read_json_object(request))
    async with web(request).fable.db.transaction() as session:
        await instance.set_registration_open(session, body.open)
    return JSONResponse({"open": body.open})


async def _settings_json(request: Request) -> dict[str, Any]:
    w = web(request)
    async with w.fable.db.reading() as session:
        url, source = await instance.public_url(session, w.fable.settings)
        is_open = await instance.registration_open(session, w.fable.settings.fable_open_registration)
    return {"registration_open": is_open, "public_url": url, "public_url_source": source,
            "mail": w.mailer.configured}


async def get_settings(request: Request) -> Response:
    """The instance settings an admin may change here, and where the public URL comes from
    (``configured``: FABLE_BASE_URL, which wins; ``pinned``: set here or at the first
    registration; ``unset``)."""
    await _admin(request)
    return JSONResponse(await _settings_json(request))


async def set_settings(request: Request) -> Response:
    await _admin(request)
    body = parse_model(InstanceSettings, await read_json_object(request))
    async with web(request).fable.db.transaction() as session:
        if body.public_url is not None:
            await instance.set_public_url(session, body.public_url)
        if body.registration_open is not None:
            await instance.set_registration_open(session, body.registration_open)
    return JSONResponse(await _settings_json(request))


async def create_invitation(request: Request) -> Response:
    info = await _admin(request)
    body = parse_model(NewInvitation, await read_json_object(request))
    async with web(request).fable.db.transaction() as session:
        row, token = await accounts.create_invitation(session, info.user_id, body.email)
    return JSONResponse(
        {
            "id": row.id,
            "token": token,
            "url": f"{await base_url(request)}/register?invitation={token}",
            "email": row.email,
            "expires_at": row.expires_at.isoformat(),
        },
        status_code=201,
    )


async def list_accounts(request: Request) -> Response:
    await _admin(request)
    async with web(request).fable.db.reading() as session:
        users = await accounts.list_users(session)
    return JSONResponse({"items": [accounts.account_view(u) for u in users]})


async def set_account_state(request: Request) -> Response:
    """Disable (``is_active: false``) or enable an account: a disabled one cannot sign in, its
    sessions end and its API keys stop working at once; its data stays."""
    info = await _admin(request)
    body = parse_model(AccountState, await read_json_object(request))
    w = web(request)
    user_id = request.path_params["user_id"]
    async with w.fable.db.transaction() as session:
        user = await accounts.set_active(session, user_id, body.is_active, by=info.user_id)
    w.auth.forget_user(user.id)
    return JSONResponse(accounts.account_view(user))


routes = [
    ApiRoute("/api/admin/registration", get_registration, methods=["GET"],
             doc=Doc("Whether registration is open (admin)", "admin", session_only=True)),
    ApiRoute("/api/admin/registration", set_registration, methods=["PUT"],
             doc=Doc("Open or close registration (admin)", "admin", RegistrationSetting, session_only=True)),
    ApiRoute("/api/admin/settings", get_settings, methods=["GET"],
             doc=Doc("Instance settings: registration, public URL (admin)", "admin", session_only=True)),
    ApiRoute("/api/admin/settings", set_settings, methods=["PATCH"],
             doc=Doc("Change instance settings (admin)", "admin", InstanceSettings, session_only=True)),
    ApiRoute("/api/admin/invitations", create_invitation, methods=["POST"],
             doc=Doc("Create an invitation link (admin)", "admin", NewInvitation, status=201, session_only=True)),
    ApiRoute("/api/admin/users", list_accounts, methods=["GET"],
             doc=Doc("Every account (admin)", "admin", session_only=True)),
    ApiRoute("/api/admin/users/{user_id:int}", set_account_state, methods=["PATCH"],
             doc=Doc("Disable or enable an account (admin)", "admin", AccountState, session_only=True)),
]
