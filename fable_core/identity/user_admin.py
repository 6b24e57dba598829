"""Accounts as an admin manages them, as tools: every account with its use, disable or enable
one, change its role, delete it with everything it owns.

For admins in person only (``admin=True, credentials="session"``: a signed-in admin, or the
operator at the instance's shell through ``fable user ...``): no API key, OAuth token or
assistant ever manages accounts. Each change is checked again inside its transaction, audited
and announced by :mod:`fable_core.identity.users`, so a disabled or demoted account is refused at
once here and within moments on other replicas.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, StrictBool

from fable_core.admin.audit import Actor
from fable_core.errors import InvalidInput
from fable_core.identity import users as admin
from fable_core.identity.types import RowId
from fable_core.identity.views import UserView
from fable_core.tools import Context, Route, tool

__all__ = ["AccountList", "AccountView", "DeletedAccount"]


class AccountView(UserView):
    """What an admin sees of an account."""

    is_active: bool
    last_login_at: datetime | None = Field(description="Null: never signed in.")
    notes: int = Field(description="Notes and tasks it owns.")
    storage_bytes: int = Field(description="UTF-8 bytes of its notes' titles and bodies, versions included.")


class AccountList(BaseModel):
    items: list[AccountView]


class DeletedAccount(BaseModel):
    id: int
    username: str
    deleted: bool = True
    notes: int
    projects: int
    shares_given: int
    shares_received: int


def _views(rows: list[dict[str, Any]]) -> list[AccountView]:
    return [AccountView.model_validate(row) for row in rows]


@tool(group="admin", title="List accounts", scope="read", admin=True, credentials="session", agents=False,
      route=Route("GET", "/admin/users"))
async def list_users(ctx: Context) -> AccountList:
    """Admin: every account, with its last sign-in, notes and storage."""
    return AccountList(items=_views(await admin.account_overview(ctx.session)))


@tool(group="admin", title="Change an account", scope="write", admin=True, credentials="session", agents=False,
      idempotent=True, route=Route("PATCH", "/admin/users/{user_id}"))
async def update_user(ctx: Context, user_id: RowId, is_active: StrictBool | None = None,
                      role: Literal["user", "admin"] | None = None) -> AccountView:
    """Admin: disable or enable an account, or change its role. A disabled account cannot sign
    in, its sessions end and its API keys stop working; its data stays.

    Args:
        is_active: false disables the account, true enables it.
        role: Its new role (the last active admin stays one).
    """
    if is_active is None and role is None:
        raise InvalidInput("give is_active or role", field="is_active")
    actor = Actor.of(ctx.caller)
    if is_active is not None:
        await admin.set_account_active(ctx.session, actor, user_id, is_active)
    if role is not None:
        await admin.change_role(ctx.session, actor, user_id, role)
    [account] = _views(await admin.account_overview(ctx.session, only=user_id))
    return account


@tool(group="admin", title="Delete an account", scope="write", admin=True, credentials="session", agents=False,
      destructive=True, route=Route("DELETE", "/admin/users/{user_id}"))
async def delete_user(ctx: Context, user_id: RowId) -> DeletedAccount:
    """Admin: delete an account and everything it owns; shares of its projects and notes end
    with them, and so do shares made to it."""
    user, owned = await admin.delete_account(ctx.session, Actor.of(ctx.caller), user_id)
    return DeletedAccount.model_validate({"id": user.id, "username": user.username, **owned})
