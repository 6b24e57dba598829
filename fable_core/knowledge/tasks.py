"""Tasks: status changes, completion with recurrence, grouped listing, work logs.

Completing a task whose ``recurrence_rule`` (RFC 5545) yields a date after its due date creates
the next occurrence: a new task with the same fields, due on that date. The rule moves to the new
task, so the completed one is plain history and re-completing it cannot spawn a second copy.
"""

from __future__ import annotations

from datetime import date, datetime, time

from dateutil.rrule import rrulestr
from pydantic import BaseModel
from sqlalchemy import func

from fable_core.access import get_visible
from fable_core.db.models import Note
from fable_core.errors import InvalidInput
from fable_core.knowledge.types import NoteId, Status
from fable_core.knowledge.views import NoteSummary
from fable_core.tools import Context, Route, tool

__all__ = ["apply_status", "next_occurrence"]


def next_occurrence(rule: str, due: date) -> date | None:
    """The first date the rule yields after ``due`` (counting from ``due``), or None."""
    after = rrulestr(rule, dtstart=datetime.combine(due, time()))
    following = after.after(datetime.combine(due, time()), inc=False)  # type: ignore[union-attr]
    return following.date() if following else None


async def apply_status(ctx: Context, note: Note, status: Status) -> Note | None:
    """Set ``note``'s status; on completion stamp it and spawn the next occurrence (returned)."""
    previous = note.status
    note.status = status
    if status != "done":
        note.completed_at = None
        return None
    if previous == "done":
        return None
    note.completed_at = func.now()
    if not (note.recurrence_rule and note.due_date):
        return None
    following = next_occurrence(note.recurrence_rule, note.due_date)
    if following is None:
        return None
    from fable_core.knowledge.notes import save_changes  # notes imports this module

    successor = Note(
        user_id=note.user_id, title=note.title, body=note.body, tags=list(note.tags),
        status="todo", priority=note.priority, due_date=following,
        recurrence_rule=note.recurrence_rule, project_id=note.project_id,
        milestone_id=note.milestone_id, parent_id=note.parent_id, version=1,
    )
    note.recurrence_rule = None
    ctx.session.add(successor)
    await save_changes(ctx, successor, created=True)
    return successor


class CompletedTask(BaseModel):
    task: NoteSummary
    next_occurrence: NoteSummary | None = None


@tool(title="Complete a task", scope="write", idempotent=True,
      route=Route("POST", "/tasks/{note_id}/complete"))
async def complete_task(ctx: Context, note_id: NoteId) -> CompletedTask:
    """Mark a task done. A recurring task gets its next occurrence, returned as next_occurrence.
    Completing an already-done task changes nothing."""
    from fable_core.knowledge.notes import save_changes

    note = await get_visible(ctx.session, Note, note_id, ctx.caller, for_update=True)
    if note.status is None:
        raise InvalidInput(f"note {note_id} is not a task; convert it with convert_note first",
                           note_id=note_id)
    if note.status == "done":
        return CompletedTask(task=NoteSummary.model_validate(note))
    successor = await apply_status(ctx, note, "done")
    await save_changes(ctx, note, body_changed=False)
    await ctx.session.refresh(note, ["completed_at"])
    return CompletedTask(
        task=NoteSummary.model_validate(note),
        next_occurrence=NoteSummary.model_validate(successor) if successor else None,
    )
