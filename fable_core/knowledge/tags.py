"""``list_tags``: the caller's tags with how many notes carry each, most used first (the hierarchy
they make is :mod:`fable_core.knowledge.browse.tags`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints
from sqlalchemy import func, select, text

from fable_core.db.models import Note
from fable_core.knowledge.filters import escape_like
from fable_core.knowledge.views import TagCount, TagList
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import reach_of, readable
from fable_core.tools.paging import Cursor, decode_cursor, encode_cursor


@tool(group="notes", title="List tags", scope="read", route=Route("GET", "/tags"))
async def list_tags(
    ctx: Context,
    prefix: Annotated[str | None, StringConstraints(strip_whitespace=True, max_length=64)] = None,
    limit: Annotated[int, Field(ge=1, le=500)] = 100,
    cursor: Cursor = None,
) -> TagList:
    """The caller's tags with how many notes carry each, most used first.

    Args:
        prefix: Only tags starting with this.
    """
    position = decode_cursor(cursor, "tags")
    offset = int(position[0]) if position else 0
    tag = func.unnest(Note.tags).label("tag")
    inner = select(tag).where(readable(Note, await reach_of(ctx.session, ctx.caller))).subquery()
    stmt = select(inner.c.tag, func.count().label("n")).group_by(inner.c.tag)
    if prefix:
        stmt = stmt.where(inner.c.tag.like(f"{escape_like(prefix.lower())}%"))
    rows = (await ctx.session.execute(
        stmt.order_by(text("n DESC"), inner.c.tag).offset(offset).limit(limit + 1)
    )).all()
    return TagList(
        items=[TagCount(tag=t, count=n) for t, n in rows[:limit]],
        next_cursor=encode_cursor("tags", [offset + limit]) if len(rows) > limit else None,
    )
