"""Naming the people and groups one shares with: by username and group name (or id), with
errors that say what was not found."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import Group, User
from fable_core.errors import NotFound

__all__ = ["find_group", "find_user"]


async def find_user(session: AsyncSession, username: str) -> User:
    """The account called ``username`` (case ignored), or NotFound."""
    user = await session.scalar(select(User).where(func.lower(User.username) == username.strip().lower()))
    if user is None:
        raise NotFound(f"no user is called {username!r}", username=username)
    return user


async def find_group(session: AsyncSession, group: int | str) -> Group:
    """The group with this id or name (case ignored), or NotFound."""
    found = await (session.get(Group, group) if isinstance(group, int) else session.scalar(
        select(Group).where(func.lower(Group.name) == group.strip().lower())))
    if found is None:
        raise NotFound(f"no group {group!r}", group=group)
    return found
