"""Work logged against a task: when, how many minutes, on what.

Logging work does not change the task itself (no new version); the log is its own list, paged
newest first, with the total of all its minutes so an agent need not add pages up.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from sqlalchemy import delete, func, select, tuple_

from fable_core.access import get_visible
from fable_core.db.models import TaskLog
from fable_core.errors import InvalidInput
from fable_core.knowledge.paging import decode_cursor, encode_cursor
from fable_core.knowledge.tasks import require_task
from fable_core.knowledge.types import Cursor, Limit, NoteId, RowId
from fable_core.knowledge.views import Deleted
from fable_core.tools import Context, Route, tool

__all__ = ["WorkLog", "WorkLogPage"]

Minutes = Annotated[int, Field(ge=1, le=1440, description="Minutes worked (1-1440).")]


class WorkLog(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    note_id: int
    work_date: date
    minutes: int | None
    description: str
    created_at: datetime


class WorkLogPage(BaseModel):
    note_id: int
    total_minutes: int = Field(description="Minutes over all of the task's logs, not just this page.")
    count: int = Field(description="How many logs the task has in all.")
    items: list[WorkLog]
    next_cursor: str | None = None


@tool(title="Log work on a task", scope="write", idempotent=False,
      route=Route("POST", "/tasks/{note_id}/logs"))
async def log_work(
    ctx: Context,
    note_id: NoteId,
    minutes: Minutes,
    work_date: date | None = None,
    description: Annotated[str, StringConstraints(strip_whitespace=True, max_length=10_000)] = "",
) -> WorkLog:
    """Record time spent on a task.

    Args:
        work_date: The day the work was done (ISO date); defaults to today in the user's timezone.
        description: What was done.
    """
    note = await require_task(ctx, note_id)
    if work_date is None:
        work_date = await ctx.today()
    log = TaskLog(user_id=ctx.user_id, note_id=note.id, work_date=work_date, minutes=minutes,
                  description=description)
    ctx.session.add(log)
    await ctx.session.flush()
    await ctx.session.refresh(log, ["created_at"])
    return WorkLog.model_validate(log)


@tool(title="List work logged on a task", scope="read", route=Route("GET", "/tasks/{note_id}/logs"))
async def list_work_logs(ctx: Context, note_id: NoteId, limit: Limit = 50,
                         cursor: Cursor = None) -> WorkLogPage:
    """List the work logged on a task, most recent day first, with the total minutes."""
    note = await require_task(ctx, note_id)
    mine = TaskLog.note_id == note.id
    total, count = (await ctx.session.execute(select(func.sum(TaskLog.minutes), func.count()).where(mine))).one()
    stmt = select(TaskLog).where(mine)
    position = decode_cursor(cursor, "worklogs")
    if position is not None:
        try:
            at = (date.fromisoformat(position[0]), int(position[1]))
        except (IndexError, TypeError, ValueError) as e:
            raise InvalidInput("cursor is not valid for this listing", field="cursor") from e
        stmt = stmt.where(tuple_(TaskLog.work_date, TaskLog.id) < at)
    logs = (await ctx.session.execute(
        stmt.order_by(TaskLog.work_date.desc(), TaskLog.id.desc()).limit(limit + 1))).scalars().all()
    items = [WorkLog.model_validate(log) for log in logs[:limit]]
    more = len(logs) > limit
    return WorkLogPage(
        note_id=note.id, total_minutes=total or 0, count=count, items=items,
        next_cursor=encode_cursor("worklogs", [items[-1].work_date, items[-1].id]) if more else None,
    )


@tool(title="Delete a work log entry", scope="write", destructive=True, idempotent=False,
      route=Route("DELETE", "/logs/{log_id}"))
async def delete_work_log(ctx: Context, log_id: RowId) -> Deleted:
    """Delete one entry of work logged on a task (by its id, from list_work_logs)."""
    log = await get_visible(ctx.session, TaskLog, log_id, ctx.caller)
    await ctx.session.execute(delete(TaskLog).where(TaskLog.id == log.id))
    return Deleted(id=log.id)
