"""How long notifications are kept: the ``prune_notifications`` job, daily at 03:23 UTC.

An inbox is a list of what happened lately, not an archive: read notifications go after
:data:`KEEP_READ`, unread ones after :data:`KEEP_UNREAD` (what a notification told of is still in
its note, project or conversation). Without this the table would only grow, and with it every
inbox listing's scan.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import delete, or_

from fable_core.db.database import Database, rowcount
from fable_core.db.models import Notification
from fable_core.tools.jobs import job

if TYPE_CHECKING:
    from fable_core.tools.runtime import Runtime

__all__ = ["KEEP_READ", "KEEP_UNREAD", "prune"]

KEEP_READ = timedelta(days=90)
KEEP_UNREAD = timedelta(days=365)


@job(cron="23 3 * * *")
async def prune_notifications(fable: Runtime) -> None:
    """Delete notifications past their keeping time."""
    await prune(fable.db)


async def prune(db: Database, now: datetime | None = None) -> int:
    """Delete what is past its keeping time as of ``now``; returns how many."""
    now = now or datetime.now(UTC)
    async with db.transaction() as session:
        result = await session.execute(delete(Notification).where(or_(
            Notification.created_at < now - KEEP_UNREAD,
            Notification.read_at.is_not(None) & (Notification.created_at < now - KEEP_READ))))
    return rowcount(result)
