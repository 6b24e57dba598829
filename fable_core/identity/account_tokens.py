"""Single-use account tokens: invitations, password resets and email verifications.

A token is a random secret given to a person once (in a link or an email); only its SHA-256 is
stored, with an expiry. Redeeming it marks it used in the same transaction as the change it
authorises, so a replayed or expired token is refused and changes nothing.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime, timedelta
from typing import Literal

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import AccountToken
from fable_core.errors import InvalidInput
from fable_core.tools.access import of_user

__all__ = ["TokenKind", "discard_tokens", "issue_token", "redeem_token"]

TokenKind = Literal["invite", "reset", "verify"]
_WHAT = {"invite": "invitation", "reset": "password reset link", "verify": "email verification link"}


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def issue_token(
    session: AsyncSession,
    kind: TokenKind,
    ttl: timedelta,
    *,
    user_id: int | None = None,
    created_by: int | None = None,
    email: str | None = None,
) -> tuple[AccountToken, str]:
    """Store a new token; returns the row and the secret, which is never retrievable again."""
    token = secrets.token_urlsafe(32)
    row = AccountToken(
        kind=kind,
        token_hash=_hash(token),
        user_id=user_id,
        created_by=created_by,
        email=email,
        expires_at=datetime.now(UTC) + ttl,
    )
    session.add(row)
    await session.flush()
    return row, token


async def redeem_token(session: AsyncSession, kind: TokenKind, token: str) -> AccountToken:
    """Mark a valid token used and return it; InvalidInput if unknown, expired or already used."""
    row = await session.scalar(
        select(AccountToken)
        .where(AccountToken.token_hash == _hash(token or ""), AccountToken.kind == kind)
        .with_for_update()
    )
    now = datetime.now(UTC)
    if row is None or row.used_at is not None or row.expires_at <= now:
        reason = "unknown" if row is None else "already used" if row.used_at else "expired"
        said = "unknown (or was revoked)" if reason == "unknown" and kind == "invite" else reason
        raise InvalidInput(f"this {_WHAT[kind]} is {said}", field="token", reason=reason)
    row.used_at = now
    await session.flush()
    return row


async def discard_tokens(session: AsyncSession, kind: TokenKind, user_id: int) -> None:
    """Drop the user's unused tokens of ``kind``: after a password reset, the other reset links
    sent earlier must not work any more."""
    await session.execute(delete(AccountToken).where(
        AccountToken.kind == kind, of_user(AccountToken, user_id), AccountToken.used_at.is_(None)))
