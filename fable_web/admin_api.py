"""Admin endpoints under /api/admin for accounts, invitations and the audit log (the instance's
settings and mail are in :mod:`fable_web.instance_api`).

All of them need an admin's signed-in session: an API key is refused (403 ``session_only``),
whoever it belongs to, so a leaked key can never manage accounts. Each change is made, checked
and audited by :mod:`fable_core.identity.users`; this module only translates HTTP. What this process
remembers of a changed account's sessions and keys is dropped at once, so a disabled or demoted
account is refused on its next request here (other replicas follow within two seconds).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints, model_validator
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from fable_core.admin.audit import Actor, audit_page
from fable_core.errors import Forbidden
from fable_core.identity import invitations
from fable_core.identity import users as admin
from fable_core.identity.invitations import MAX_TTL
from fable_web.account_api import Email
from fable_web.context import base_url, web
from fable_web.payload import parse_model, read_json_object
from fable_web.routing import ApiRoute, admin_doc

__all__ = ["admin_actor", "routes"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NewInvitation(_Body):
    email: Email | None = Field(None, description="Only this address may register with it (and it is verified).")
    expires_in_hours: int = Field(int(invitations.DEFAULT_TTL.total_seconds() // 3600), ge=1,
                                  le=int(MAX_TTL.total_seconds() // 3600), description="How long the link works.")


class AccountChange(_Body):
    is_active: StrictBool | None = Field(None, description="false disables the account, true enables it.")
    role: Literal["user", "admin"] | None = None

    @model_validator(mode="after")
    def _something(self) -> AccountChange:
        if self.is_active is None and self.role is None:
            raise ValueError("give is_active or role")
        return self


class AuditQuery(_Body):
    limit: int = Field(50, ge=1, le=200)
    cursor: Annotated[str, StringConstraints(min_length=1, max_length=2048)] | None = None


async def admin_actor(request: Request) -> Actor:
    """The signed-in admin making this request; 403 for anyone else and for any API key."""
    info = await web(request).auth.session(request)
    if info.role != "admin":
        raise Forbidden("only an admin may do this")
    return Actor(info.user_id, info.username, "web")


async def list_accounts(request: Request) -> Response:
    await admin_actor(request)
    async with web(request).fable.db.reading() as session:
        items = await admin.account_overview(session)
    return JSONResponse({"items": items})


async def change_account(request: Request) -> Response:
    """Disable or enable an account (``is_active``) and/or change its ``role``: a disabled one
    cannot sign in, its sessions end and its API keys stop working at once; its data stays."""
    actor = await admin_actor(request)
    body = parse_model(AccountChange, await read_json_object(request))
    w = web(request)
    user_id = request.path_params["user_id"]
    async with w.fable.db.transaction() as session:
        if body.is_active is not None:
            await admin.set_account_active(session, actor, user_id, body.is_active)
        if body.role is not None:
            await admin.change_role(session, actor, user_id, body.role)
        [account] = await admin.account_overview(session, only=user_id)
    w.auth.forget_user(user_id)
    return JSONResponse(account)


async def delete_account(request: Request) -> Response:
    """Delete an account and everything it owns; shares of its projects and notes end with
    them, and so do shares made to it."""
    actor = await admin_actor(request)
    w = web(request)
    async with w.fable.db.transaction() as session:
        user, owned = await admin.delete_account(session, actor, request.path_params["user_id"])
    w.auth.forget_user(user.id)
    return JSONResponse({"id": user.id, "username": user.username, "deleted": True, **owned})


async def list_invitations(request: Request) -> Response:
    await admin_actor(request)
    async with web(request).fable.db.reading() as session:
        items = await invitations.pending_invitations(session)
    return JSONResponse({"items": items})


async def create_invitation(request: Request) -> Response:
    actor = await admin_actor(request)
    body = parse_model(NewInvitation, await read_json_object(request))
    w = web(request)
    async with w.fable.db.transaction() as session:
        row, token = await admin.invite(session, actor, w.fable.settings, body.email,
                                        timedelta(hours=body.expires_in_hours))
    return JSONResponse({**invitations.invitation_view(row, actor.name), "token": token,
                         "url": f"{await base_url(request)}/register?invitation={token}"}, status_code=201)


async def revoke_invitation(request: Request) -> Response:
    actor = await admin_actor(request)
    async with web(request).fable.db.transaction() as session:
        row = await admin.revoke(session, actor, request.path_params["invitation_id"])
    return JSONResponse({"id": row.id, "revoked": True})


async def audit_log(request: Request) -> Response:
    """The audit log, newest first, a page at a time (``?limit=&cursor=``)."""
    await admin_actor(request)
    query = parse_model(AuditQuery, dict(request.query_params))
    async with web(request).fable.db.reading() as session:
        items, next_cursor = await audit_page(session, query.limit, query.cursor)
    return JSONResponse({"items": items, "next_cursor": next_cursor})


routes = [
    ApiRoute("/api/admin/users", list_accounts, methods=["GET"],
             doc=admin_doc("Every account, with its last sign-in, notes and storage")),
    ApiRoute("/api/admin/users/{user_id:int}", change_account, methods=["PATCH"],
             doc=admin_doc("Disable or enable an account, or change its role", AccountChange)),
    ApiRoute("/api/admin/users/{user_id:int}", delete_account, methods=["DELETE"],
             doc=admin_doc("Delete an account and everything it owns")),
    ApiRoute("/api/admin/invitations", list_invitations, methods=["GET"],
             doc=admin_doc("Pending invitations")),
    ApiRoute("/api/admin/invitations", create_invitation, methods=["POST"],
             doc=admin_doc("Create an invitation link", NewInvitation, status=201)),
    ApiRoute("/api/admin/invitations/{invitation_id:int}", revoke_invitation, methods=["DELETE"],
             doc=admin_doc("Revoke a pending invitation")),
    ApiRoute("/api/admin/audit", audit_log, methods=["GET"],
             doc=admin_doc("The audit log, newest first")),
]
