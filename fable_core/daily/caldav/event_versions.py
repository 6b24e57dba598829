"""``list_event_versions``: the versions of events that lost a sync conflict (the server's or
Fable's), kept so that nothing the user wrote on either side is lost."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, Field, StringConstraints
from sqlalchemy import select

from fable_core.db.models import EventVersion
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import owned_by

if TYPE_CHECKING:
    pass



class EventVersionItem(BaseModel):
    id: int
    uid: str
    side: str = Field(description="Whose edit lost: local or server.")
    reason: str = Field(description="conflict (both sides edited) or deleted (on the server).")
    title: str
    modified_at: datetime | None = Field(None, exclude_if=lambda v: v is None)
    created_at: datetime
    ical: str | None = Field(None, exclude_if=lambda v: v is None, description="The whole VEVENT (with_ical).")


class EventVersionPage(BaseModel):
    items: list[EventVersionItem]


@tool(group="calendar", title="List event versions", scope="read", route=Route("GET", "/caldav/versions"))
async def list_event_versions(
    ctx: Context, uid: Annotated[str, StringConstraints(strip_whitespace=True, max_length=255)] = "",
    with_ical: bool = False, limit: Annotated[int, Field(ge=1, le=100)] = 20,
) -> EventVersionPage:
    """Sync conflicts' losing versions of your events, newest first.

    Args:
        uid: Only this event's (its UID).
    """
    stmt = select(EventVersion).where(owned_by(EventVersion, ctx.caller))
    if uid:
        stmt = stmt.where(EventVersion.uid == uid)
    rows = (await ctx.session.execute(stmt.order_by(EventVersion.id.desc()).limit(limit))).scalars()
    return EventVersionPage(items=[EventVersionItem(
        id=r.id, uid=r.uid, side=r.side, reason=r.reason, title=r.title, modified_at=r.modified_at,
        created_at=r.created_at, ical=r.ical if with_ical else None) for r in rows])
