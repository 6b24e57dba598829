"""Work logged against a task: when, how many minutes, on what; and the report across tasks.

Logging work does not change the task itself (no new version); the log is its own list, paged
newest first, with the total of all its minutes so an agent need not add pages up.
:func:`work_report` totals the minutes of a date range (by default this week so far, in the
user's time zone) by project, with each project's top tasks, and by day: two grouped queries,
whatever the number of logs.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from sqlalchemy import ColumnElement, Integer, delete, func, select, tuple_, type_coerce

from fable_core.db.models import Note, Project, TaskLog
from fable_core.errors import InvalidInput
from fable_core.knowledge.matching import project_ref
from fable_core.knowledge.tasks import require_task
from fable_core.knowledge.types import NoteId, ProjectRef
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import belongs_to, get_visible, owned_by, reach_of, readable, require
from fable_core.tools.paging import Cursor, Limit, decode_cursor, encode_cursor
from fable_core.tools.results import Deleted, RowId, absent_when_none

__all__ = ["MAX_REPORT_DAYS", "WorkLog", "WorkLogPage", "WorkReport"]

MAX_REPORT_DAYS = 366

Minutes = Annotated[int, Field(ge=1, le=1440)]


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


@tool(group="projects", title="Log work on a task", scope="write", idempotent=False,
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
        work_date: Default: today.
    """
    note = await require_task(ctx, note_id, need="editor")
    if work_date is None:
        work_date = await ctx.today()
    log = TaskLog(user_id=ctx.user_id, note_id=note.id, work_date=work_date, minutes=minutes,
                  description=description)
    ctx.session.add(log)
    await ctx.session.flush()
    await ctx.session.refresh(log, ["created_at"])
    return WorkLog.model_validate(log)


@tool(group="projects", title="List work logged on a task", scope="read", route=Route("GET", "/tasks/{note_id}/logs"))
async def list_work_logs(ctx: Context, note_id: NoteId, limit: Limit = 50,
                         cursor: Cursor = None) -> WorkLogPage:
    """The work logged on a task, most recent day first, with the total minutes."""
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


@tool(group="projects", title="Delete a work log entry", scope="write", destructive=True, idempotent=False,
      route=Route("DELETE", "/logs/{log_id}"))
async def delete_work_log(ctx: Context, log_id: RowId) -> Deleted:
    """Delete one entry of work logged on a task (its id from list_work_logs)."""
    log = await get_visible(ctx.session, TaskLog, log_id, ctx.caller)
    if not belongs_to(log.user_id, ctx.user_id):  # one's own entry, else an editor's right on the task
        await require(ctx.session, ctx.caller, log, "editor")
    await ctx.session.execute(delete(TaskLog).where(TaskLog.id == log.id))
    return Deleted(id=log.id)


_MINUTES = type_coerce(func.coalesce(func.sum(TaskLog.minutes), 0), Integer).label("minutes")
_NO_PROJECT = "(no project)"


class ReportTask(BaseModel):
    id: int
    title: str
    minutes: int


class ReportProject(BaseModel):
    id: int | None = absent_when_none("Absent for the tasks in no project.")
    title: str
    minutes: int
    task_count: int = Field(description="Tasks with time logged; `tasks` lists the top ones.")
    tasks: list[ReportTask]


class ReportDay(BaseModel):
    day: date
    minutes: int


class WorkReport(BaseModel):
    start: date
    end: date
    timezone: str = Field(description="The user's timezone: what the default range means.")
    total_minutes: int
    projects: list[ReportProject] = Field(description="Most minutes first.")
    days: list[ReportDay] = Field(description="The days with time logged, in order.")


@tool(group="projects", title="Report time logged", scope="read", route=Route("GET", "/reports/work"))
async def work_report(
    ctx: Context,
    start: date | None = None,
    end: date | None = None,
    project_id: RowId | None = None,
    project: ProjectRef = None,
    top: Annotated[int, Field(ge=1, le=50)] = 5,
) -> WorkReport:
    """Minutes logged on tasks from start to end (included), by project (with top tasks) and by day.

    For timesheets and "how long did I spend on X".

    Args:
        start: Default: Monday of end's week.
        end: Default: today.
        top: Tasks listed per project.
    """
    today = await ctx.today()
    end = end or today
    start = start or end - timedelta(days=end.weekday())
    if start > end:
        raise InvalidInput(f"start {start} is after end {end}", field="start")
    if (end - start).days >= MAX_REPORT_DAYS:
        raise InvalidInput(f"a report covers at most {MAX_REPORT_DAYS} days; {start} to {end} is "
                           f"{(end - start).days + 1} days", field="end")
    where: list[ColumnElement[bool]] = [owned_by(TaskLog, ctx.caller), TaskLog.work_date.between(start, end),
                                        readable(Note, await reach_of(ctx.session, ctx.caller))]
    scoped = await project_ref(ctx.session, ctx.caller, project_id, project)
    if scoped is not None:
        where.append(Note.project_id == scoped.id)
    projects = await _report_projects(ctx, where, top)
    days = (await ctx.session.execute(
        select(TaskLog.work_date, _MINUTES).join(Note, Note.id == TaskLog.note_id).where(*where)
        .group_by(TaskLog.work_date).order_by(TaskLog.work_date))).all()
    return WorkReport(start=start, end=end, timezone=await ctx.timezone(),
                      total_minutes=sum(m for _, m in days), projects=projects,
                      days=[ReportDay(day=d, minutes=m) for d, m in days])


async def _report_projects(ctx: Context, where: list[ColumnElement[bool]], top: int) -> list[ReportProject]:
    """Minutes per project and the ``top`` tasks of each, in one query: tasks summed, then
    ranked and totalled within their project by window functions."""
    tasks = (select(Note.project_id, Note.id, Note.title, _MINUTES).join(Note, Note.id == TaskLog.note_id)
             .where(*where).group_by(Note.project_id, Note.id, Note.title).subquery())
    project = tasks.c.project_id
    ranked = select(
        *tasks.c,
        func.row_number().over(partition_by=project, order_by=(tasks.c.minutes.desc(), tasks.c.id)).label("rank"),
        func.sum(tasks.c.minutes).over(partition_by=project).label("total"),
        func.count().over(partition_by=project).label("count"),
    ).subquery()
    rows = (await ctx.session.execute(
        select(ranked.c.project_id, Project.title, ranked.c.total, ranked.c.count, ranked.c.id, ranked.c.title,
               ranked.c.minutes)
        .outerjoin(Project, Project.id == ranked.c.project_id).where(ranked.c.rank <= top)
        .order_by(ranked.c.total.desc(), ranked.c.project_id.nulls_last(), ranked.c.rank))).all()
    projects: dict[Any, ReportProject] = {}
    for project_id, title, total, count, task_id, task_title, minutes in rows:
        group = projects.get(project_id)
        if group is None:
            group = projects[project_id] = ReportProject(id=project_id, title=title or _NO_PROJECT,
                                                         minutes=total, task_count=count, tasks=[])
        group.tasks.append(ReportTask(id=task_id, title=task_title, minutes=minutes))
    return list(projects.values())
