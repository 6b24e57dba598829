"""Signed-in browser sessions, kept server-side so that signing out ends them.

A session is a random token the browser holds in its cookie; the database keeps its SHA-256
(never the token), the session's CSRF token, where and when it started and was last seen, and
when it expires (:data:`LIFETIME` after sign-in). Deleting the row ends the session on every
replica: the web surface remembers a looked-up session for at most two seconds.

Sessions end when the user signs out (this one, or all of them), changes or resets their
password (every other one, or all), is disabled, or when they expire.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.database import rowcount
from fable_core.db.models import LoginSession, User
from fable_core.errors import NotFound
from fable_core.identity.revocations import announce
from fable_core.tools.access import of_user

__all__ = ["LIFETIME", "NewSession", "SessionInfo", "end_all", "end_others", "end_session",
           "find_session", "list_sessions", "session_view", "start_session", "token_hash"]

LIFETIME = timedelta(days=30)
_SEEN_EVERY = timedelta(minutes=1)  # how stale last_seen_at may get: one write a minute at most


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class NewSession:
    token: str  # for the cookie; never stored
    csrf: str
    row: LoginSession


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What a request's session tells: whose it is, its row and CSRF token, and the account."""

    id: int
    user_id: int
    csrf: str
    username: str
    role: str
    is_active: bool


async def start_session(session: AsyncSession, user_id: int, *, user_agent: str = "",
                        ip: str = "") -> NewSession:
    """A new session for a user who just proved who they are (their last sign-in is now); their
    expired ones are dropped."""
    now = datetime.now(UTC)
    await session.execute(delete(LoginSession).where(of_user(LoginSession, user_id),
                                                     LoginSession.expires_at <= now))
    await session.execute(update(User).where(User.id == user_id).values(last_login_at=now))
    token, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(24)
    row = LoginSession(user_id=user_id, token_hash=token_hash(token), csrf=csrf,
                       user_agent=user_agent[:200], ip=ip[:64], expires_at=now + LIFETIME)
    session.add(row)
    await session.flush()
    return NewSession(token, csrf, row)


async def find_session(session: AsyncSession, token: str) -> SessionInfo | None:
    """The live session a cookie's token names (and the account behind it), or None; stamps
    when it was last seen, at most once a minute."""
    now = datetime.now(UTC)
    row = (await session.execute(
        select(LoginSession.id, LoginSession.user_id, LoginSession.csrf, LoginSession.last_seen_at,
               User.username, User.role, User.is_active)
        .join(User, User.id == LoginSession.user_id)
        .where(LoginSession.token_hash == token_hash(token), LoginSession.expires_at > now)
    )).first()
    if row is None:
        return None
    if now - row.last_seen_at > _SEEN_EVERY:
        await session.execute(update(LoginSession).where(LoginSession.id == row.id).values(last_seen_at=now))
    return SessionInfo(row.id, row.user_id, row.csrf, row.username, row.role, row.is_active)


async def end_session(session: AsyncSession, user_id: int, session_id: int) -> None:
    """End one of the user's sessions; another user's (or a gone one) is NotFound."""
    gone = await session.scalar(delete(LoginSession).where(
        LoginSession.id == session_id, of_user(LoginSession, user_id)).returning(LoginSession.id))
    if gone is None:
        raise NotFound(f"session {session_id} not found", session_id=session_id)
    await announce(session, f"session of user {user_id}")


async def end_others(session: AsyncSession, user_id: int, keep: int | None) -> int:
    """End every session of the user but ``keep``; how many ended."""
    stmt = delete(LoginSession).where(of_user(LoginSession, user_id))
    if keep is not None:
        stmt = stmt.where(LoginSession.id != keep)
    ended = rowcount(await session.execute(stmt))
    if ended:
        await announce(session, f"session of user {user_id}")
    return ended


async def end_all(session: AsyncSession, user_id: int) -> int:
    return await end_others(session, user_id, None)


def session_view(row: LoginSession, current: int | None) -> dict[str, Any]:
    return {"id": row.id, "created_at": row.created_at.isoformat(), "last_seen_at": row.last_seen_at.isoformat(),
            "user_agent": row.user_agent, "ip": row.ip, "current": row.id == current}


async def list_sessions(session: AsyncSession, user_id: int) -> list[LoginSession]:
    """The user's live sessions, most recently seen first."""
    rows = await session.scalars(
        select(LoginSession).where(of_user(LoginSession, user_id), LoginSession.expires_at > datetime.now(UTC))
        .order_by(LoginSession.last_seen_at.desc(), LoginSession.id.desc()))
    return list(rows)
