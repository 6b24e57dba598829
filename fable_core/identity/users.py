"""Administration: what admins (in the web UI) and operators (``fable user ...``) do to accounts
and the instance, each action checked, done and audited in one transaction.

Every action here writes its audit row (:mod:`fable_core.admin.audit`) with the change, so no
surface can forget to; the rules themselves (the last admin, one's own account, registration
modes, invitations) live in :mod:`fable_core.identity.accounts`, :mod:`fable_core.admin.instance`,
:mod:`fable_core.identity.invitations` and :mod:`fable_core.admin.mail_settings`. An admin acting from the web
is checked again inside the transaction (:func:`require_admin`): a role taken away a moment ago
on another replica, whose session this process still remembers, does not act.

The account overview counts each account's notes and their storage (the UTF-8 bytes of the
titles and bodies of its notes and of their saved versions) in one statement of grouped
subqueries, whatever the number of accounts.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.admin.audit import Actor, Target, audit, require_admin
from fable_core.config import Settings
from fable_core.db.models import AccountToken, ApiKey, Note, NoteVersion, User
from fable_core.identity import accounts
from fable_core.identity.invitations import revoke_invitation
from fable_core.identity.passwords import Hashed
from fable_core.tools.caller import Scope

__all__ = ["account_overview", "change_role", "create_account", "delete_account", "invite", "issue_api_key", "revoke",
           "revoke_api_key", "set_account_active", "set_account_password"]


def _who(user: User) -> Target:
    return Target("user", user.id, user.username)


async def account_overview(session: AsyncSession, *, only: int | None = None) -> list[dict[str, Any]]:
    """Every account (or the one with id ``only``) as an admin sees it, with how many notes it
    has and their storage in bytes."""
    notes = (select(Note.user_id.label("owner"), func.count().label("notes"),
                    func.sum(func.octet_length(Note.title) + func.octet_length(Note.body)).label("bytes"))
             .group_by(Note.user_id).subquery())
    versions = (select(NoteVersion.user_id.label("owner"),
                       func.sum(func.octet_length(NoteVersion.title) + func.octet_length(NoteVersion.body))
                       .label("bytes"))
                .group_by(NoteVersion.user_id).subquery())
    storage = func.coalesce(notes.c.bytes, 0) + func.coalesce(versions.c.bytes, 0)
    statement = (select(User, func.coalesce(notes.c.notes, 0), storage)
                 .outerjoin(notes, notes.c.owner == User.id).outerjoin(versions, versions.c.owner == User.id)
                 .order_by(User.id))
    rows = await session.execute(statement if only is None else statement.where(User.id == only))
    return [{**accounts.account_view(user), "notes": int(count), "storage_bytes": int(size)}
            for user, count, size in rows]


async def create_account(session: AsyncSession, actor: Actor, username: str, password: Hashed | None,
                         role: str | None = None) -> User:
    """An operator's new account (the first one an admin, unless told)."""
    await require_admin(session, actor)
    user = await accounts.create_user(session, username, password, role=role)
    await audit(session, actor, "user.create", _who(user), role=user.role)
    return user


async def set_account_password(session: AsyncSession, actor: Actor, username: str, password: Hashed) -> User:
    """An operator sets an account's password: every session of it ends."""
    await require_admin(session, actor)
    user = await accounts.set_password(session, username, password)
    await audit(session, actor, "user.password", _who(user))
    return user


async def issue_api_key(session: AsyncSession, actor: Actor, user: User, name: str,
                        scope: Scope) -> tuple[ApiKey, str]:
    """An operator's API key for an account (the key itself is never audited)."""
    await require_admin(session, actor)
    row, key = await accounts.create_api_key(session, user.id, name, scope)
    await audit(session, actor, "apikey.create", Target("api_key", row.id, row.name), user=user.username,
                scope=row.scope)
    return row, key


async def revoke_api_key(session: AsyncSession, actor: Actor, key_id: int) -> tuple[ApiKey, str]:
    """An operator revokes any account's API key; returns it and its owner's name."""
    await require_admin(session, actor)
    row, owner = await accounts.revoke_any_api_key(session, key_id)
    await audit(session, actor, "apikey.revoke", Target("api_key", row.id, row.name), user=owner)
    return row, owner


async def set_account_active(session: AsyncSession, actor: Actor, who: str | int, active: bool) -> User:
    await require_admin(session, actor)
    user = await accounts.set_active(session, who, active, by=actor.account_id)
    await audit(session, actor, "user.enable" if active else "user.disable", _who(user))
    return user


async def change_role(session: AsyncSession, actor: Actor, who: str | int, role: str) -> User:
    await require_admin(session, actor)
    user, before = await accounts.set_role(session, who, role)
    if before != role:
        await audit(session, actor, "user.role", _who(user), role={"from": before, "to": role})
    return user


async def delete_account(session: AsyncSession, actor: Actor, who: str | int) -> tuple[User, dict[str, int]]:
    await require_admin(session, actor)
    user, owned = await accounts.delete_user(session, who, by=actor.account_id)
    await audit(session, actor, "user.delete", _who(user), **owned)
    return user, owned


async def invite(session: AsyncSession, actor: Actor, settings: Settings, email: str | None,
                 ttl: timedelta) -> tuple[AccountToken, str]:
    """A new invitation and its secret (never audited: only which invitation it is)."""
    await require_admin(session, actor)
    row, token = await accounts.create_invitation(session, actor.account_id, email, ttl, settings=settings)
    await audit(session, actor, "invitation.create", Target("invitation", row.id, row.email),
                expires_at=row.expires_at.isoformat())
    return row, token


async def revoke(session: AsyncSession, actor: Actor, invitation_id: int) -> AccountToken:
    await require_admin(session, actor)
    row = await revoke_invitation(session, invitation_id)
    await audit(session, actor, "invitation.revoke", Target("invitation", row.id, row.email))
    return row


