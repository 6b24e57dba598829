"""Admin endpoints under /api/admin: the registration toggle and invitation links."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, StringConstraints
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fable_core import accounts
from fable_core.caller import Caller
from fable_core.errors import Forbidden
from fable_web.context import base_url, web
from fable_web.payload import parse_model, read_json_object

__all__ = ["REQUEST_MODELS", "routes"]


class RegistrationSetting(BaseModel):
    model_config = ConfigDict(extra="forbid")
    open: bool


class NewInvitation(BaseModel):
    model_config = ConfigDict(extra="forbid")
    email: Annotated[str, StringConstraints(strip_whitespace=True, max_length=320, pattern=r"^[^@\s]+@[^@\s]+$")] | None = None


REQUEST_MODELS: dict[str, type[BaseModel]] = {
    "set_registration": RegistrationSetting,
    "create_invitation": NewInvitation,
}


async def _admin(request: Request) -> Caller:
    caller = await web(request).auth.caller(request)
    if not caller.is_admin:
        raise Forbidden("only an admin may do this")
    return caller


async def get_registration(request: Request) -> Response:
    await _admin(request)
    w = web(request)
    async with w.fable.db.transaction() as session:
        is_open = await accounts.registration_open(session, w.fable.settings.fable_open_registration)
    return JSONResponse({"open": is_open})


async def set_registration(request: Request) -> Response:
    await _admin(request)
    body = parse_model(RegistrationSetting, await read_json_object(request))
    async with web(request).fable.db.transaction() as session:
        await accounts.set_registration_open(session, body.open)
    return JSONResponse({"open": body.open})


async def create_invitation(request: Request) -> Response:
    caller = await _admin(request)
    body = parse_model(NewInvitation, await read_json_object(request))
    async with web(request).fable.db.transaction() as session:
        row, token = await accounts.create_invitation(session, caller.user_id, body.email)
    return JSONResponse(
        {
            "id": row.id,
            "token": token,
            "url": f"{base_url(request)}/register?invitation={token}",
            "email": row.email,
            "expires_at": row.expires_at.isoformat(),
        },
        status_code=201,
    )


routes = [
    Route("/api/admin/registration", get_registration, methods=["GET"]),
    Route("/api/admin/registration", set_registration, methods=["PUT"]),
    Route("/api/admin/invitations", create_invitation, methods=["POST"]),
]
