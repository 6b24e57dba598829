"""Projects: create, change, look at, list and delete them; notes and tasks live in them.

A project is named by id or by name (``matching.resolve_project``: exact, partial, fuzzy).
Titles are unique per user, ignoring case. Deleting a project says what happens to its notes:
``notes="detach"`` (the default) keeps them, outside any project or milestone;
``notes="delete"`` deletes them with the project. Milestones always go with their project.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from sqlalchemy import ColumnElement, delete, func, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.database import rowcount
from fable_core.db.models import Milestone, Note, Project
from fable_core.errors import Conflict, InvalidInput
from fable_core.infra.events import NoteChanged, ProjectChanged
from fable_core.knowledge.matching import project_ref
from fable_core.knowledge.types import Color, ProjectRef
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import Permission, belongs_to, of_user, permission_name, reach_of, readable, require
from fable_core.tools.paging import Cursor, Limit, decode_cursor, encode_cursor
from fable_core.tools.results import RowId, absent_when_none

__all__ = ["MilestoneSummary", "TaskCounts", "milestone_summaries", "require_project", "task_counts"]

ProjectStatus = Literal["active", "completed", "archived"]
ProjectTitle = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
LongText = Annotated[str, StringConstraints(max_length=20_000)]
MAX_MILESTONES_SHOWN = 100


class _View(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class TaskCounts(_View):
    """Tasks by status, and plain notes, in a project or milestone."""

    todo: int = 0
    in_progress: int = 0
    done: int = 0
    cancelled: int = 0
    notes: int = Field(0, description="Plain notes (not tasks).")


class MilestoneSummary(_View):
    id: int
    project_id: int
    title: str
    description: str
    status: str
    order_index: int
    due_date: date | None = None
    task_counts: TaskCounts = Field(default_factory=TaskCounts)


class ProjectSummary(_View):
    id: int
    title: str
    status: str
    color: str | None = None
    open_tasks: int = Field(0, description="Tasks still todo or in progress.")
    updated_at: datetime
    owner: str | None = absent_when_none("Its owner, when someone shared it with you.")
    permission: Literal["viewer", "editor", "admin"] | None = absent_when_none(
        "What you may do in it, when it is shared with you.")


class ProjectInfo(ProjectSummary):
    description: str
    goal: str
    created_at: datetime


class ProjectDetail(ProjectInfo):
    auto_summary: str | None = None
    task_counts: TaskCounts
    milestone_count: int
    milestones: list[MilestoneSummary] = Field(
        description=f"In order; at most {MAX_MILESTONES_SHOWN} (see list_milestones for all).")


class ProjectPage(_View):
    items: list[ProjectSummary]
    next_cursor: str | None = None


class ProjectDeleted(_View):
    id: int
    deleted: bool = True
    notes: Literal["detach", "delete"]
    notes_detached: int
    notes_deleted: int
    milestones_deleted: int


# --- shared helpers ---------------------------------------------------------------------------


async def require_project(ctx: Context, project_id: int | None, project: str | None,
                          need: Permission = "viewer") -> Project:
    """The project a tool must be pointed at, by id or by name, which the caller may use as
    ``need`` says."""
    found = await project_ref(ctx.session, ctx.caller, project_id, project)
    if found is None:
        raise InvalidInput("pass project_id or project (its name)", field="project_id")
    await require(ctx.session, ctx.caller, found, need)
    return found


async def _shared_marks(ctx: Context, project: Project) -> dict[str, Any]:
    """``owner`` and ``permission`` of a project someone else shared with the caller."""
    if belongs_to(project.user_id, ctx.user_id):
        return {}
    reach = await reach_of(ctx.session, ctx.caller)
    return {"owner": reach.owner_name(project.user_id),
            "permission": permission_name(reach.project_level(project.user_id, project.id))}


async def task_counts(session: AsyncSession, where: ColumnElement[bool],
                      by: Any = None) -> dict[Any, TaskCounts]:
    """Counts of notes matching ``where``, per value of ``by`` (or under the key None)."""
    columns = [func.count().filter(Note.status == s).label(s)
               for s in ("todo", "in_progress", "done", "cancelled")]
    columns.append(func.count().filter(Note.status.is_(None)).label("notes"))
    group = [by] if by is not None else []
    rows = (await session.execute(select(*group, *columns).where(where).group_by(*group))).all()
    return {(row[0] if by is not None else None): TaskCounts(**row._mapping) for row in rows}


async def _refuse_taken(session: AsyncSession, owner_id: int, title: str,
                        exclude_id: int | None = None) -> None:
    """Project titles are unique per owner."""
    stmt = select(Project.id, Project.title).where(
        of_user(Project, owner_id), func.lower(Project.title) == title.lower())
    if exclude_id is not None:
        stmt = stmt.where(Project.id != exclude_id)
    taken = (await session.execute(stmt.limit(1))).first()
    if taken is not None:
        raise Conflict(f"project {taken.id} is already called {taken.title!r}; choose another "
                       f"title or update that project", existing_project_id=taken.id)


async def _open_tasks(session: AsyncSession, ids: list[int]) -> dict[int, int]:
    if not ids:
        return {}
    rows = await session.execute(
        select(Note.project_id, func.count())
        .where(Note.project_id.in_(ids), Note.status.in_(("todo", "in_progress")))
        .group_by(Note.project_id))
    return {project_id: count for project_id, count in rows if project_id is not None}  # in_(ids): never None


async def _info(ctx: Context, project: Project) -> ProjectInfo:
    await ctx.session.flush()
    await ctx.session.refresh(project, ["created_at", "updated_at"])
    open_ = (await _open_tasks(ctx.session, [project.id])).get(project.id, 0)
    return ProjectInfo.model_validate({**_columns(project), "open_tasks": open_, **await _shared_marks(ctx, project)})


def _columns(project: Project) -> dict[str, Any]:
    return {c: getattr(project, c) for c in (
        "id", "title", "status", "color", "description", "goal", "auto_summary",
        "created_at", "updated_at")}


# --- tools ------------------------------------------------------------------------------------


async def milestone_summaries(session: AsyncSession, project_id: int, *, limit: int,
                              after: tuple[int, int] | None = None,
                              status: Sequence[str] | None = None) -> list[MilestoneSummary]:
    """The project's milestones in order (from after ``after`` = (order_index, id)), with counts."""
    stmt = select(Milestone).where(Milestone.project_id == project_id)
    if status:
        stmt = stmt.where(Milestone.status.in_(status))
    if after is not None:
        stmt = stmt.where(tuple_(Milestone.order_index, Milestone.id) > after)
    rows = (await session.execute(
        stmt.order_by(Milestone.order_index, Milestone.id).limit(limit))).scalars().all()
    counts = await task_counts(session, Note.milestone_id.in_([m.id for m in rows]), by=Note.milestone_id)
    return [MilestoneSummary.model_validate(m).model_copy(
        update={"task_counts": counts.get(m.id, TaskCounts())}) for m in rows]


@tool(group="projects", title="Create a project", scope="write", route=Route("POST", "/projects"))
async def create_project(
    ctx: Context,
    title: ProjectTitle,
    description: LongText = "",
    goal: LongText = "",
    status: ProjectStatus = "active",
    color: Color | None = None,
) -> ProjectInfo:
    """Create a project to group notes, tasks and milestones.

    Refused if the caller has a project of this title (case ignored).

    Args:
        goal: What the project is for.
    """
    await _refuse_taken(ctx.session, ctx.user_id, title)
    project = Project(user_id=ctx.user_id, title=title, description=description, goal=goal,
                      status=status, color=color)
    ctx.session.add(project)
    info = await _info(ctx, project)
    ctx.emit(ProjectChanged(ctx.user_id, project.id, "created"))
    return info


@tool(group="projects", title="Update a project", scope="write", idempotent=True,
      route=Route("PATCH", "/projects/{project_id}"))
async def update_project(
    ctx: Context,
    project_id: RowId | None = None,
    project: ProjectRef = None,
    title: ProjectTitle | None = None,
    description: LongText | None = None,
    goal: LongText | None = None,
    status: ProjectStatus | None = None,
    color: Color | None = None,
    clear: list[Literal["color"]] | None = None,
) -> ProjectInfo:
    """Change the fields given of a project (by project_id or by name).

    Args:
        clear: Fields to empty.
    """
    found = await require_project(ctx, project_id, project, need="editor")
    if title is not None and title.lower() != found.title.lower():
        await require(ctx.session, ctx.caller, found, "admin")  # its name is among its owner's names
        await _refuse_taken(ctx.session, found.user_id, title, exclude_id=found.id)
    values = {"title": title, "description": description, "goal": goal, "status": status,
              "color": color}
    for column, value in values.items():
        if value is not None:
            setattr(found, column, value)
    if "color" in (clear or []):
        found.color = None
    ctx.emit(ProjectChanged(found.user_id, found.id, "updated"))
    return await _info(ctx, found)


@tool(group="projects", title="Get a project", scope="read", route=Route("GET", "/projects/{project_id}"))
async def get_project(ctx: Context, project_id: RowId | None = None,
                      project: ProjectRef = None) -> ProjectDetail:
    """A project (by project_id or by name) with its milestones in order and task counts by status."""
    found = await require_project(ctx, project_id, project)
    counts = (await task_counts(ctx.session, Note.project_id == found.id)).get(None, TaskCounts())
    total = await ctx.session.scalar(
        select(func.count()).select_from(Milestone).where(Milestone.project_id == found.id))
    milestones = await milestone_summaries(ctx.session, found.id, limit=MAX_MILESTONES_SHOWN)
    return ProjectDetail.model_validate({
        **_columns(found), "open_tasks": counts.todo + counts.in_progress, "task_counts": counts,
        "milestone_count": total or 0, "milestones": milestones, **await _shared_marks(ctx, found),
    })


@tool(group="projects", title="List projects", scope="read", route=Route("GET", "/projects"))
async def list_projects(
    ctx: Context,
    status: list[ProjectStatus] | None = None,
    limit: Limit = 20,
    cursor: Cursor = None,
) -> ProjectPage:
    """The caller's projects by title (A-Z), with their open task counts."""
    key = func.lower(Project.title)
    reach = await reach_of(ctx.session, ctx.caller)
    stmt = select(Project, key.label("sort_key")).where(readable(Project, reach))
    if status:
        stmt = stmt.where(Project.status.in_(status))
    position = decode_cursor(cursor, "projects")
    if position is not None:
        try:
            stmt = stmt.where(tuple_(key, Project.id) > (str(position[0]), int(position[1])))
        except (IndexError, TypeError, ValueError) as e:
            raise InvalidInput("cursor is not valid for this listing", field="cursor") from e
    rows = (await ctx.session.execute(stmt.order_by(key, Project.id).limit(limit + 1))).all()
    page = rows[:limit]
    open_ = await _open_tasks(ctx.session, [r[0].id for r in page])
    items = [ProjectSummary.model_validate({**_columns(r[0]), "open_tasks": open_.get(r[0].id, 0),
                                            **await _shared_marks(ctx, r[0])}) for r in page]
    more = len(rows) > limit
    return ProjectPage(items=items, next_cursor=encode_cursor(
        "projects", [page[-1].sort_key, page[-1][0].id]) if more else None)


@tool(group="projects", title="Delete a project", scope="write", destructive=True, idempotent=False,
      route=Route("DELETE", "/projects/{project_id}"))
async def delete_project(
    ctx: Context,
    project_id: RowId | None = None,
    project: ProjectRef = None,
    notes: Literal["detach", "delete"] = "detach",
) -> ProjectDeleted:
    """Delete a project and its milestones.

    Its notes and tasks are kept outside any project ("detach") or deleted too ("delete"). By
    name, only the exact title (case ignored) is accepted."""
    found = await require_project(ctx, project_id, project, need="admin")
    if project is not None and found.title.casefold() != project.casefold():
        raise InvalidInput(f"deleting by name needs the exact title; did you mean {found.title!r} "
                           f"(project_id {found.id})?", field="project", candidate_id=found.id)
    s, in_project = ctx.session, Note.project_id == found.id
    note_ids = list((await s.execute(select(Note.id).where(in_project))).scalars())
    if notes == "delete":
        await s.execute(delete(Note).where(in_project))
    else:
        await s.execute(update(Note).where(in_project).values(project_id=None, milestone_id=None))
    gone = await s.execute(delete(Milestone).where(Milestone.project_id == found.id))
    await s.execute(delete(Project).where(Project.id == found.id))
    ctx.emit(ProjectChanged(found.user_id, found.id, "deleted"))
    for note_id in note_ids:
        ctx.emit(NoteChanged(found.user_id, note_id, "deleted" if notes == "delete" else "updated"))
    return ProjectDeleted(
        id=found.id, notes=notes, milestones_deleted=rowcount(gone),
        notes_detached=len(note_ids) if notes == "detach" else 0,
        notes_deleted=len(note_ids) if notes == "delete" else 0,
    )

