"""Milestones: ordered stages of a project that its tasks can belong to.

Titles are unique within a project (case ignored). New milestones go last; ``reorder_milestones``
takes the complete new order, so two agents cannot leave a half-applied one. Deleting a
milestone keeps its tasks in the project, outside any milestone.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints
from sqlalchemy import case, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.database import rowcount
from fable_core.db.models import Milestone, Note
from fable_core.errors import Conflict, InvalidInput
from fable_core.knowledge.projects import (
    MilestoneSummary,
    TaskCounts,
    milestone_summaries,
    require_project,
    task_counts,
)
from fable_core.knowledge.types import ProjectRef
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import get_visible
from fable_core.tools.paging import Cursor, Limit, decode_cursor, encode_cursor
from fable_core.tools.results import RowId

__all__: list[str] = []

MilestoneStatus = Literal["open", "in_progress", "done"]
MilestoneTitle = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
MilestoneText = Annotated[str, StringConstraints(max_length=20_000)]
MilestoneId = Annotated[int, Field(ge=1, le=2**31 - 1)]


class MilestonePage(BaseModel):
    project_id: int
    items: list[MilestoneSummary]
    next_cursor: str | None = None


class MilestoneDeleted(BaseModel):
    id: int
    deleted: bool = True
    tasks_detached: int = Field(description="Notes and tasks that stay in the project, now without milestone.")


async def _summary(session: AsyncSession, milestone: Milestone) -> MilestoneSummary:
    await session.flush()
    await session.refresh(milestone)
    counts = await task_counts(session, Note.milestone_id == milestone.id)
    return MilestoneSummary.model_validate(milestone).model_copy(
        update={"task_counts": counts.get(None, TaskCounts())})


async def _refuse_taken(session: AsyncSession, project_id: int, title: str,
                        exclude_id: int | None = None) -> None:
    stmt = select(Milestone.id, Milestone.title).where(
        Milestone.project_id == project_id, func.lower(Milestone.title) == title.lower())
    if exclude_id is not None:
        stmt = stmt.where(Milestone.id != exclude_id)
    taken = (await session.execute(stmt.limit(1))).first()
    if taken is not None:
        raise Conflict(f"milestone {taken.id} of project {project_id} is already called "
                       f"{taken.title!r}", existing_milestone_id=taken.id)


@tool(group="projects", title="Create a milestone", scope="write",
      route=Route("POST", "/projects/{project_id}/milestones"))
async def create_milestone(
    ctx: Context,
    title: MilestoneTitle,
    project_id: RowId | None = None,
    project: ProjectRef = None,
    description: MilestoneText = "",
    status: MilestoneStatus = "open",
    due_date: date | None = None,
) -> MilestoneSummary:
    """Add a milestone after a project's last one (project by id or by name)."""
    found = await require_project(ctx, project_id, project, need="editor")
    await _refuse_taken(ctx.session, found.id, title)
    last = await ctx.session.scalar(
        select(func.max(Milestone.order_index)).where(Milestone.project_id == found.id))
    milestone = Milestone(user_id=found.user_id, project_id=found.id, title=title,
                          description=description, status=status, due_date=due_date,
                          order_index=(last + 1) if last is not None else 0)
    ctx.session.add(milestone)
    return await _summary(ctx.session, milestone)


@tool(group="projects", title="Update a milestone", scope="write", idempotent=True,
      route=Route("PATCH", "/milestones/{milestone_id}"))
async def update_milestone(
    ctx: Context,
    milestone_id: MilestoneId,
    title: MilestoneTitle | None = None,
    description: MilestoneText | None = None,
    status: MilestoneStatus | None = None,
    due_date: date | None = None,
    clear: list[Literal["due_date"]] | None = None,
) -> MilestoneSummary:
    """Change the fields given of a milestone.

    Args:
        clear: Fields to empty.
    """
    milestone = await get_visible(ctx.session, Milestone, milestone_id, ctx.caller, for_update=True, need="editor")
    if title is not None and title.lower() != milestone.title.lower():
        await _refuse_taken(ctx.session, milestone.project_id, title, exclude_id=milestone.id)
    values = {"title": title, "description": description, "status": status, "due_date": due_date}
    for column, value in values.items():
        if value is not None:
            setattr(milestone, column, value)
    if "due_date" in (clear or []):
        milestone.due_date = None
    return await _summary(ctx.session, milestone)


@tool(group="projects", title="List milestones of a project", scope="read",
      route=Route("GET", "/projects/{project_id}/milestones"))
async def list_milestones(
    ctx: Context,
    project_id: RowId | None = None,
    project: ProjectRef = None,
    status: list[MilestoneStatus] | None = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> MilestonePage:
    """A project's milestones in order, each with its task counts by status."""
    found = await require_project(ctx, project_id, project)
    position = decode_cursor(cursor, "milestones")
    after = None
    if position is not None:
        try:
            after = (int(position[0]), int(position[1]))
        except (IndexError, TypeError, ValueError) as e:
            raise InvalidInput("cursor is not valid for this listing", field="cursor") from e
    rows = await milestone_summaries(ctx.session, found.id, limit=limit + 1, after=after, status=status)
    items, more = rows[:limit], len(rows) > limit
    return MilestonePage(project_id=found.id, items=items, next_cursor=encode_cursor(
        "milestones", [items[-1].order_index, items[-1].id]) if more else None)


@tool(group="projects", title="Delete a milestone", scope="write", destructive=True, idempotent=False,
      route=Route("DELETE", "/milestones/{milestone_id}"))
async def delete_milestone(ctx: Context, milestone_id: MilestoneId) -> MilestoneDeleted:
    """Delete a milestone; its notes and tasks stay in the project, without milestone."""
    milestone = await get_visible(ctx.session, Milestone, milestone_id, ctx.caller, need="editor")
    detached = await ctx.session.execute(
        update(Note).where(Note.milestone_id == milestone.id).values(milestone_id=None))
    await ctx.session.execute(delete(Milestone).where(Milestone.id == milestone.id))
    return MilestoneDeleted(id=milestone.id, tasks_detached=rowcount(detached))


@tool(group="projects", title="Reorder a project's milestones", scope="write", idempotent=True,
      route=Route("POST", "/projects/{project_id}/milestones/reorder"))
async def reorder_milestones(
    ctx: Context,
    milestone_ids: Annotated[list[MilestoneId], Field(min_length=1, max_length=1000)],
    project_id: RowId | None = None,
    project: ProjectRef = None,
) -> MilestonePage:
    """Put a project's milestones in a new order; returns the first page of it.

    Args:
        milestone_ids: All of the project's milestones, each once, first to last.
    """
    found = await require_project(ctx, project_id, project, need="editor")
    current = set((await ctx.session.execute(
        select(Milestone.id).where(Milestone.project_id == found.id).with_for_update())).scalars())
    if len(set(milestone_ids)) != len(milestone_ids) or set(milestone_ids) != current:
        raise InvalidInput(
            f"milestone_ids must list each of project {found.id}'s milestones exactly once: "
            f"{sorted(current)}", field="milestone_ids", expected=sorted(current))
    order = case({m: i for i, m in enumerate(milestone_ids)}, value=Milestone.id)
    await ctx.session.execute(
        update(Milestone).where(Milestone.id.in_(milestone_ids)).values(order_index=order))
    rows = await milestone_summaries(ctx.session, found.id, limit=51)
    return MilestonePage(project_id=found.id, items=rows[:50], next_cursor=encode_cursor(
        "milestones", [rows[49].order_index, rows[49].id]) if len(rows) > 50 else None)
