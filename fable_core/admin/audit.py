"""The audit log: every administrative action, who did it, to what, in ``app_logs`` (category
``audit``), and the page of it admins read.

A row is written in the transaction of the action it records, so it exists exactly when the
action committed (a refused action changes nothing and leaves no row; an outcome that is not a
database change, a test mail, is recorded on its own). ``details`` holds the target and what
changed, never a secret: no password, token or key, only whether one was set.

Actors are admins in a signed-in session (``web``) or operators at a shell (``cli``, named by
their system account), whose commands need no Fable account at all, and, for what users do to
their own things (sign-in, API keys, shares), the user on whatever surface they came by.

To audit something, in the transaction that does it::

    from fable_core.admin.audit import Actor, Target, audit

    await audit(session, Actor.of(ctx.caller), "export.create", Target("export", row.id), notes=12)

(``Actor.of`` takes a tool's caller; a web handler with a session uses ``Actor(info.user_id,
info.username, "web")``; a shell command ``Actor.operator()``). Name actions ``thing.verb``.
Something that is not a database change (a refused sign-in) goes in a transaction of its own.
Admins read them with ``list_logs(category="audit")``.
"""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import AppLog, User
from fable_core.errors import Forbidden
from fable_core.tools.caller import Caller
from fable_core.tools.paging import NewestFirst

__all__ = ["Actor", "Target", "audit", "audit_page", "operator_name", "require_admin"]

_PAGES = NewestFirst("audit", AppLog.id, AppLog.created_at)

CATEGORY = "audit"


@dataclass(frozen=True, slots=True)
class Actor:
    """Who did it."""

    account_id: int | None  # the admin's account; None for an operator at a shell
    name: str
    surface: Literal["web", "cli", "mcp", "rest", "assistant", "internal"]

    @classmethod
    def of(cls, caller: Caller) -> Actor:
        """The caller of a tool (the operator at a shell has no account)."""
        if caller.operator:
            return cls(None, (caller.username or "cli")[:64], "cli")
        return cls(caller.user_id, (caller.username or f"user:{caller.user_id}")[:64], caller.surface)

    @classmethod
    def operator(cls) -> Actor:
        """The person at this shell (``fable user ...``)."""
        return cls(None, operator_name(), "cli")


def operator_name() -> str:
    """The name the operator at this shell acts under: ``cli:<system account>``."""
    try:
        who = getpass.getuser()
    except (OSError, KeyError):  # no name for this uid (a container's)
        who = "unknown"
    return f"cli:{who}"[:64]


@dataclass(frozen=True, slots=True)
class Target:
    """What it was done to: ``Target("user", 3, "bob")``."""

    kind: str
    id: int | str | None = None
    name: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {k: v for k, v in (("kind", self.kind), ("id", self.id), ("name", self.name)) if v is not None}


async def audit(session: AsyncSession, actor: Actor, action: str, target: Target | None = None,
                **details: Any) -> None:
    """Record ``action`` (``user.disable``) in the caller's transaction."""
    data = ({"target": target.as_json()} if target else {}) | details
    session.add(AppLog(category=CATEGORY, user_id=actor.account_id, username=actor.name[:64], action=action[:100],
                       surface=actor.surface, details=data or None))
    await session.flush()


async def audit_page(session: AsyncSession, limit: int, cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
    """The newest audit rows first, ``limit`` at a time, and the cursor of the next page
    (kept in ``(created_at, id)`` order, which the category's index serves)."""
    rows = list(await session.scalars(_PAGES.query(select(AppLog).where(AppLog.category == CATEGORY), cursor, limit)))
    kept, next_cursor = _PAGES.page(rows, limit)
    return [_entry(r) for r in kept], next_cursor


def _entry(row: AppLog) -> dict[str, Any]:
    details = dict(row.details or {})
    return {"id": row.id, "at": row.created_at.isoformat(), "actor": row.username, "actor_id": row.user_id,
            "surface": row.surface, "action": row.action, "target": details.pop("target", None),
            "details": details}


async def require_admin(session: AsyncSession, actor: Actor) -> None:
    """Forbidden unless ``actor`` is an operator or, now, an active admin."""
    if actor.account_id is None:
        return
    row = (await session.execute(select(User.role, User.is_active).where(User.id == actor.account_id))).first()
    if row is None or row.role != "admin" or not row.is_active:
        raise Forbidden("only an admin may do this")
