"""Tasks: status changes, completion with recurrence, rescheduling and the grouped agenda.

Completing a task whose ``recurrence_rule`` (RFC 5545) yields a date after its due date creates
the next occurrence: a new task with the same fields, due on that date. The rule moves to the new
task, so the completed one is plain history and re-completing it cannot spawn a second copy.
Each occurrence counts from its own due date, so a ``COUNT=n`` rule moves on as ``COUNT=n-1``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints
from sqlalchemy import ColumnElement, and_, case, func, select
from sqlalchemy.orm import defer

from fable_core.db.models import Note, Project
from fable_core.errors import InvalidInput
from fable_core.knowledge.assignees import ASSIGNEE_COLUMN, AssigneeFilter, assignee_clause, assignee_filter
from fable_core.knowledge.filters import tag_clause
from fable_core.knowledge.listing import mark_shared, summary_of
from fable_core.knowledge.matching import project_ref
from fable_core.knowledge.quickadd import parse_quick
from fable_core.knowledge.saving import apply_status, save_changes
from fable_core.knowledge.types import MAX_TITLE, NoteId, Priority, ProjectRef, Tag
from fable_core.knowledge.views import NoteSummary
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import Permission, get_visible, reach_of, readable, visible
from fable_core.tools.paging import Cursor, decode_cursor, encode_cursor
from fable_core.tools.results import RowId, absent_when_none

__all__ = ["ParsedTask", "require_task"]


async def require_task(ctx: Context, note_id: int, *, for_update: bool = False,
                       need: Permission = "viewer") -> Note:
    """The note ``note_id``, refusing plain notes (InvalidInput) as task tools must."""
    note = await get_visible(ctx.session, Note, note_id, ctx.caller, for_update=for_update, need=need)
    if note.status is None:
        raise InvalidInput(f"note {note_id} is not a task; convert it with convert_note first",
                           note_id=note_id)
    return note


class CompletedTask(BaseModel):
    task: NoteSummary
    next_occurrence: NoteSummary | None = None


@tool(group="tasks", title="Complete a task", scope="write", idempotent=True,
      route=Route("POST", "/tasks/{note_id}/complete"))
async def complete_task(ctx: Context, note_id: NoteId) -> CompletedTask:
    """Mark a task done; a recurring one gets its next occurrence (next_occurrence)."""
    note = await require_task(ctx, note_id, for_update=True, need="editor")
    if note.status == "done":
        return CompletedTask(task=await summary_of(ctx, note))
    successor = await apply_status(ctx, note, "done")
    await save_changes(ctx, note, body_changed=False)
    return CompletedTask(task=await summary_of(ctx, note), next_occurrence=successor)


@tool(group="tasks", title="Reschedule a task", scope="write", idempotent=True,
      route=Route("POST", "/tasks/{note_id}/reschedule"))
async def reschedule_task(ctx: Context, note_id: NoteId, due_date: date) -> NoteSummary:
    """Move an open task to a new due date; keeps a version.

    A recurring task's later occurrences follow from the new date."""
    note = await require_task(ctx, note_id, for_update=True, need="editor")
    if note.status in ("done", "cancelled"):
        raise InvalidInput(f"task {note_id} is {note.status}; reopen it with "
                           f"update_note(status='todo') before rescheduling", note_id=note_id)
    if note.due_date == due_date:
        return await summary_of(ctx, note)
    note.due_date = due_date
    await save_changes(ctx, note, body_changed=False)
    return await summary_of(ctx, note)


# --- the grouped agenda -----------------------------------------------------------------------

TaskGroupName = Literal["overdue", "today", "upcoming", "no_date", "recently_done"]
_GROUPS: tuple[TaskGroupName, ...] = ("overdue", "today", "upcoming", "no_date", "recently_done")
_OPEN = ("todo", "in_progress")
_TAG_SHAPE = re.compile(r"^[\w][\w\-./]*$", re.UNICODE)


class TaskGroup(BaseModel):
    name: TaskGroupName
    count: int = Field(description="How many tasks the group holds in all; `items` is one page.")
    items: list[NoteSummary]
    next_cursor: str | None = Field(None, description="Pass as `cursor` for more of this group.")


class TaskAgenda(BaseModel):
    today: date = Field(description="Today in the user's timezone: what overdue/today/upcoming mean.")
    timezone: str
    groups: list[TaskGroup]


class _Group:
    """How one agenda group selects and orders its tasks (keyset-paged on ``key``, id)."""

    def __init__(self, where: ColumnElement[bool], key: Any, descending: bool, parse: Any) -> None:
        self.where, self.key, self.descending, self.parse = where, key, descending, parse


def _groups(today: date, done_days: int) -> dict[str, _Group]:
    open_ = Note.status.in_(_OPEN)
    since = func.now() - func.make_interval(0, 0, 0, done_days)
    return {
        "overdue": _Group(and_(open_, Note.due_date < today), Note.due_date, False, date.fromisoformat),
        "today": _Group(and_(open_, Note.due_date == today), Note.due_date, False, date.fromisoformat),
        "upcoming": _Group(and_(open_, Note.due_date > today), Note.due_date, False, date.fromisoformat),
        "no_date": _Group(and_(open_, Note.due_date.is_(None)), Note.created_at, True,
                          datetime.fromisoformat),
        "recently_done": _Group(and_(Note.status == "done", Note.completed_at >= since),
                                Note.completed_at, True, datetime.fromisoformat),
    }


TaskSort = Literal["due", "priority", "title", "created"]
_PRIORITY_RANK = case({"high": 3, "medium": 2, "low": 1}, value=Note.priority, else_=0)


def _sorted(group: _Group, sort: TaskSort) -> _Group:
    """``group`` ordered by ``sort`` instead of its own order ("due": as it is)."""
    if sort == "priority":
        return _Group(group.where, _PRIORITY_RANK, True, int)
    if sort == "title":
        return _Group(group.where, Note.title_key, False, str)
    if sort == "created":
        return _Group(group.where, Note.created_at, True, datetime.fromisoformat)
    return group


async def _page(ctx: Context, name: str, group: _Group, where: list[ColumnElement[bool]],
                limit: int, position: list[Any] | None) -> tuple[list[NoteSummary], str | None]:
    clauses = [*where, group.where]
    if position is not None:
        try:
            value, last_id = group.parse(position[1]), int(position[2])
        except (IndexError, TypeError, ValueError) as e:
            raise InvalidInput("cursor is not valid for this listing", field="cursor") from e
        row, at = func.row(group.key, Note.id), func.row(value, last_id)
        clauses.append(row < at if group.descending else row > at)
    order = (group.key.desc(), Note.id.desc()) if group.descending else (group.key.asc(), Note.id.asc())
    rows = (await ctx.session.execute(
        select(Note, group.key.label("sort_key"), ASSIGNEE_COLUMN).options(defer(Note.body)).where(*clauses)
        .order_by(*order).limit(limit + 1)
    )).all()
    reach = await reach_of(ctx.session, ctx.caller)
    items = [NoteSummary.model_validate(summary) for summary in mark_shared(
        [{**NoteSummary.model_validate(n).model_dump(), "owner_id": n.user_id, "assignee": assignee}
         for n, _, assignee in rows[:limit]], reach)]
    if len(rows) <= limit:
        return items, None
    last = rows[limit - 1]
    return items, encode_cursor("tasks", [name, last[1], last[0].id])


async def _counts(
    ctx: Context, groups: dict[TaskGroupName, _Group], where: list[ColumnElement[bool]]
) -> dict[str, int]:
    row = (await ctx.session.execute(
        select(*(func.count().filter(g.where).label(n) for n, g in groups.items())).where(*where)
    )).one()
    return dict(row._mapping)


@tool(group="tasks", title="List tasks by when they are due", scope="read", route=Route("GET", "/tasks"))
async def list_tasks(
    ctx: Context,
    project_id: RowId | None = None,
    project: ProjectRef = None,
    tag: Tag | None = None,
    priority: list[Priority] | None = None,
    status: Literal["todo", "in_progress"] | None = None,
    groups: list[TaskGroupName] | None = None,
    sort: TaskSort = "due",
    done_days: Annotated[int, Field(ge=1, le=365)] = 7,
    assignee: AssigneeFilter = "me",
    limit: Annotated[int, Field(ge=1, le=100, description="Tasks per group.")] = 20,
    cursor: Cursor = None,
) -> TaskAgenda:
    """The caller's tasks grouped by due date, each group with its `count` and a page of tasks.

    Groups: overdue, today, upcoming, no_date (open tasks) and recently_done; empty groups and
    cancelled tasks are left out. A group's `next_cursor` as `cursor` (same filters) pages it alone.
    Tasks assigned to others are left out unless `assignee` asks for them.

    Args:
        status: Only open tasks with this status (no recently_done).
        sort: Within each group.
        done_days: Days recently_done covers.
    """
    today, zone = await ctx.today(), await ctx.timezone()
    wanted = list(dict.fromkeys(groups or _GROUPS))
    position = decode_cursor(cursor, "tasks")
    if position is not None:
        if not position or position[0] not in _GROUPS:
            raise InvalidInput("cursor is not valid for this listing", field="cursor")
        wanted = [position[0]]
    where = await _task_filters(ctx, project_id, project, tag, priority)
    if status is not None:
        where.append(Note.status == status)
    assigned = await assignee_filter(ctx, assignee)
    if assigned is not None:
        where.append(assignee_clause(*assigned))
    specs = _groups(today, done_days)
    chosen = {name: _sorted(specs[name], sort) for name in wanted}
    counts = await _counts(ctx, chosen, where)
    result = []
    for name, group in chosen.items():
        if not counts[name]:
            continue
        items, next_cursor = await _page(ctx, name, group, where, limit, position)
        result.append(TaskGroup(name=name, count=counts[name], items=items, next_cursor=next_cursor))
    return TaskAgenda(today=today, timezone=zone, groups=result)


async def _task_filters(ctx: Context, project_id: int | None, project: str | None, tag: str | None,
                        priority: Sequence[str] | None) -> list[ColumnElement[bool]]:
    reach = await reach_of(ctx.session, ctx.caller)
    where: list[ColumnElement[bool]] = [readable(Note, reach), Note.status.is_not(None)]
    scoped = await project_ref(ctx.session, ctx.caller, project_id, project)
    if scoped is not None:
        where.append(Note.project_id == scoped.id)
    if tag is not None:
        where.append(tag_clause(tag))
    if priority:
        where.append(Note.priority.in_(priority))
    return where



# --- quick add ------------------------------------------------------------------------------


class ParsedTask(BaseModel):
    title: str
    due_date: date | None = absent_when_none()
    due_time: str | None = absent_when_none("HH:MM said with the date; tasks are due on a date.")
    recurrence_rule: str | None = absent_when_none()
    next_occurrence: date | None = absent_when_none("The occurrence after due_date.")
    priority: Priority | None = absent_when_none()
    tags: list[str] = Field(default_factory=list)
    project: str | None = absent_when_none("A project's name (+Name or +Several words of a project's title).")
    project_id: int | None = absent_when_none("The project of that name, when you have one (else it is new).")


@tool(group="tasks", title="Read a task typed in words", scope="read", agents=False,
      route=Route("POST", "/tasks/parse"))
async def parse_task(ctx: Context, text: Annotated[str, StringConstraints(min_length=1, max_length=500)]) -> ParsedTask:
    """Read a line such as "pay rent every month on the 1st p1 #home" or "call Anna tomorrow
    5pm" as a task's fields (title, due date, recurrence, priority, tags, project), relative to
    the caller's today; nothing is stored. Pass the fields to create_note."""
    reach = await reach_of(ctx.session, ctx.caller)
    projects = {title: project_id for project_id, title in await ctx.session.execute(
        visible(Project, reach).with_only_columns(Project.id, Project.title).order_by(Project.id))}
    found = parse_quick(text, await ctx.today(), list(projects))
    if not found.title:
        raise InvalidInput(f"{text!r} has no title left once its date, priority and tags are read", field="text")
    return ParsedTask(
        title=found.title[:MAX_TITLE], due_date=found.due_date,
        due_time=found.due_time.strftime("%H:%M") if found.due_time else None,
        recurrence_rule=found.recurrence_rule, next_occurrence=found.next_occurrence,
        priority=found.priority,
        tags=[t for t in found.tags if _TAG_SHAPE.match(t) and len(t) <= 64], project=found.project,
        project_id=projects.get(found.project) if found.project else None,
    )
