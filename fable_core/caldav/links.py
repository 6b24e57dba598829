"""The links between a user's events and their CalDAV calendar: forgotten when the calendar changes."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["forget"]


async def forget(session: AsyncSession, user_id: int) -> None:
    """Forget every event's link to the calendar (href, etag) and the deletions not yet sent."""
