"""Each user's inbox as tools: list (newest first, paged), the unread count, mark read.

A user only ever sees and marks their own notifications: ids that are not theirs are ignored
as if they did not exist, so marking never tells whether someone else's notification does.
The unread count is counted up to :data:`MAX_COUNTED` (a bell shows "99+" long before), so
polling it costs a bounded index scan however full an inbox is.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.database import rowcount
from fable_core.db.models import Notification
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import owned_by
from fable_core.tools.caller import Caller
from fable_core.tools.paging import Cursor, NewestFirst
from fable_core.tools.results import absent_when_none

__all__ = ["MAX_COUNTED", "Marked", "NotificationItem", "NotificationPage", "Unread"]

_PAGES = NewestFirst("notifications", Notification.id)

MAX_COUNTED = 1000
NotificationId = Annotated[int, Field(ge=1, le=2**63 - 1)]
PageSize = Annotated[int, Field(ge=1, le=100)]


class NotificationItem(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    kind: str = Field(description="share, unshare, group, answer or due.")
    title: str
    body: str = Field("", exclude_if=lambda body: not body)
    data: dict[str, Any] | None = absent_when_none("What it is about: note_id, project_id, conversation_id, ...")
    created_at: datetime
    read: bool


class NotificationPage(BaseModel):
    items: list[NotificationItem]
    unread: int | None = absent_when_none(f"Unread notifications (up to {MAX_COUNTED}); on the first page.")
    next_cursor: str | None = None


class Unread(BaseModel):
    unread: int = Field(description=f"Unread notifications, counted up to {MAX_COUNTED}.")


class Marked(BaseModel):
    marked: int = Field(description="Notifications that were unread and are now read.")
    unread: int = Field(description=f"Unread notifications left (up to {MAX_COUNTED}).")


@tool(group="notifications", title="List notifications", scope="read", route=Route("GET", "/notifications"))
async def list_notifications(ctx: Context, unread_only: bool = False, limit: PageSize = 20,
                             cursor: Cursor = None) -> NotificationPage:
    """List your notifications, newest first; the first page counts the unread."""
    stmt = select(Notification).where(owned_by(Notification, ctx.caller))
    if unread_only:
        stmt = stmt.where(Notification.read_at.is_(None))
    rows, next_cursor = _PAGES.page(list(await ctx.session.scalars(_PAGES.query(stmt, cursor, limit))), limit)
    return NotificationPage(
        items=[_item(row) for row in rows],
        unread=None if cursor is not None else await unread_count(ctx.session, ctx.caller), next_cursor=next_cursor)


@tool(group="notifications", title="Count unread notifications", scope="read",
      route=Route("GET", "/notifications/unread"))
async def count_notifications(ctx: Context) -> Unread:
    """Count your unread notifications."""
    return Unread(unread=await unread_count(ctx.session, ctx.caller))


@tool(group="notifications", title="Mark notifications read", scope="write", idempotent=True,
      route=Route("POST", "/notifications/read"))
async def mark_notifications_read(
    ctx: Context, ids: Annotated[list[NotificationId], Field(min_length=1, max_length=200)],
) -> Marked:
    """Mark notifications read, by id."""
    return await _mark(ctx, Notification.id.in_(ids))


@tool(group="notifications", title="Mark all notifications read", scope="write", idempotent=True,
      route=Route("POST", "/notifications/read-all"))
async def mark_all_notifications_read(ctx: Context) -> Marked:
    """Mark all your notifications read."""
    return await _mark(ctx, None)


async def _mark(ctx: Context, which: Any) -> Marked:
    stmt = update(Notification).where(owned_by(Notification, ctx.caller), Notification.read_at.is_(None))
    if which is not None:
        stmt = stmt.where(which)
    result = await ctx.session.execute(stmt.values(read_at=func.now()).execution_options(synchronize_session=False))
    return Marked(marked=rowcount(result), unread=await unread_count(ctx.session, ctx.caller))


async def unread_count(session: AsyncSession, caller: Caller) -> int:
    """The caller's unread notifications, up to :data:`MAX_COUNTED`."""
    unread = select(Notification.id).where(owned_by(Notification, caller), Notification.read_at.is_(None))
    return await session.scalar(select(func.count()).select_from(unread.limit(MAX_COUNTED).subquery())) or 0


def _item(row: Notification) -> NotificationItem:
    return NotificationItem(id=row.id, kind=row.kind, title=row.title, body=row.body, data=row.data,
                            created_at=row.created_at, read=row.read_at is not None)

