"""Naming the people and groups one shares with: by username and group name (or id), with
errors that say what was not found.

Whether a name is an account's cannot be hidden from someone who shares with it, but it must not
be learned wholesale: a caller's names that match nobody are counted (``unknown_user``, 20 an
hour, :data:`fable_core.infra.rate_limits.LIMITS`), and past that every lookup is refused for a while."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.database import Database
from fable_core.db.models import Group, User
from fable_core.errors import NotFound
from fable_core.infra.rate_limits import check_attempts, count_attempt

__all__ = ["find_group", "find_user"]


async def find_user(session: AsyncSession, username: str, *, asker: tuple[Database, int] | None = None) -> User:
    """The account called ``username`` (case ignored), or NotFound. With ``asker`` (the
    database and the asking user), names that match nobody are rate limited for that user."""
    if asker is not None:
        await check_attempts(asker[0], "unknown_user", str(asker[1]))
    user = await session.scalar(select(User).where(func.lower(User.username) == username.strip().lower()))
    if user is None:
        if asker is not None:
            await count_attempt(asker[0], "unknown_user", str(asker[1]))
        raise NotFound(f"no user is called {username!r}", username=username)
    return user


async def find_group(session: AsyncSession, group: int | str) -> Group:
    """The group with this id or name (case ignored), or NotFound."""
    found = await (session.get(Group, group) if isinstance(group, int) else session.scalar(
        select(Group).where(func.lower(Group.name) == group.strip().lower())))
    if found is None:
        raise NotFound(f"no group {group!r}", group=group)
    return found
