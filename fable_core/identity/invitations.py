"""Invitations: single-use links an admin makes, each admitting one registration before it
expires (:mod:`fable_core.identity.account_tokens` keeps only their hash, so a link is shown once, when
it is made). Pending ones are listed without their secret; revoking one deletes it, and a
revoked link is refused like one that never existed.

An invitation made for an address admits only that address, which it verifies.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import AccountToken, User
from fable_core.errors import InvalidInput, NotFound
from fable_core.identity.account_tokens import issue_token

__all__ = ["DEFAULT_TTL", "MAX_TTL", "invitation_view", "issue_invitation", "pending_invitations",
           "revoke_invitation"]

DEFAULT_TTL = timedelta(days=7)
MAX_TTL = timedelta(days=90)


async def issue_invitation(session: AsyncSession, admin_id: int | None, email: str | None,
                           ttl: timedelta = DEFAULT_TTL) -> tuple[AccountToken, str]:
    """A new invitation valid for ``ttl`` (an hour to :data:`MAX_TTL`), and its secret."""
    if not timedelta(hours=1) <= ttl <= MAX_TTL:
        raise InvalidInput(f"an invitation lasts from 1 hour to {MAX_TTL.days} days", field="expires_in_hours")
    return await issue_token(session, "invite", ttl, created_by=admin_id, email=email)


async def pending_invitations(session: AsyncSession) -> list[dict[str, Any]]:
    """Unused, unexpired invitations, soonest to expire first, with who made them."""
    rows = await session.execute(
        select(AccountToken, User.username).outerjoin(User, User.id == AccountToken.created_by)
        .where(AccountToken.kind == "invite", AccountToken.used_at.is_(None),
               AccountToken.expires_at > datetime.now(UTC))
        .order_by(AccountToken.expires_at, AccountToken.id))
    return [invitation_view(row, by) for row, by in rows]


async def revoke_invitation(session: AsyncSession, invitation_id: int) -> AccountToken:
    """Delete a pending invitation; NotFound for anything else (used, expired, not one)."""
    row: AccountToken | None = await session.scalar(
        delete(AccountToken).where(AccountToken.id == invitation_id, AccountToken.kind == "invite",
                                   AccountToken.used_at.is_(None), AccountToken.expires_at > datetime.now(UTC))
        .returning(AccountToken))
    if row is None:
        raise NotFound(f"no pending invitation {invitation_id}", invitation_id=invitation_id)
    return row


def invitation_view(row: AccountToken, created_by: str | None = None) -> dict[str, Any]:
    return {"id": row.id, "email": row.email, "created_by": created_by, "created_at": row.created_at.isoformat(),
            "expires_at": row.expires_at.isoformat()}
