"""The edit-draft tools, for the web UI's editor (``agents=False``): ``save_draft`` while a
person types (debounced), ``get_draft`` when the editor opens, ``discard_draft`` when they throw
their changes away. Saving the note deletes the saver's draft of it
(:func:`fable_core.knowledge.saving.save_changes`); the editor discards the new note's draft
once the note is created.

A draft is its writer's alone, whoever owns the note: nobody else can read or replace it, and
a note the caller cannot see is NotFound, one they may not edit Forbidden, before any draft is
looked at.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints

from fable_core.db.models import EditDraft, Note
from fable_core.knowledge.drafts import store
from fable_core.knowledge.types import MAX_TITLE, Body, NoteId
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import Permission, get_visible
from fable_core.tools.results import absent_when_none

__all__ = ["Draft", "DraftDiscarded", "DraftSaved", "UnsavedEdit"]

DraftTitle = Annotated[str, StringConstraints(max_length=MAX_TITLE)]  # may be empty while typing
DraftTags = Annotated[list[Annotated[str, StringConstraints(max_length=200)]], Field(max_length=100)]
Version = Annotated[int, Field(ge=1, le=2**31 - 1)]


class DraftSaved(BaseModel):
    note_id: int | None = absent_when_none()
    updated_at: datetime


class Draft(DraftSaved):
    title: str
    body: str
    tags: list[str]
    base_version: int | None = absent_when_none("The note's version the edit started from.")


class UnsavedEdit(BaseModel):
    draft: Draft | None = absent_when_none("Your unsaved edit; absent when there is none.")


class DraftDiscarded(BaseModel):
    note_id: int | None = absent_when_none()
    discarded: bool = Field(description="False when there was no draft.")


async def _check(ctx: Context, note_id: int | None, need: Permission) -> None:
    """NotFound unless the caller sees the note; Forbidden unless they may do ``need`` to it."""
    if note_id is not None:
        await get_visible(ctx.session, Note, note_id, ctx.caller, need=need)


def _draft(row: EditDraft) -> Draft:
    return Draft(note_id=row.note_id, updated_at=row.updated_at, title=row.title, body=row.body, tags=list(row.tags),
                 base_version=row.base_version)


@tool(group="notes", title="Save an unsaved edit", scope="write", idempotent=True, agents=False,
      route=Route("PUT", "/drafts"))
async def save_draft(
    ctx: Context,
    note_id: NoteId | None = None,
    title: DraftTitle = "",
    body: Body = "",
    tags: DraftTags | None = None,
    base_version: Version | None = None,
) -> DraftSaved:
    """Keep your unsaved edit of a note (no note_id: of a new note) until you save or discard it.

    Args:
        note_id: Omitted: the new note you are writing.
        base_version: The note's version the edit started from.
    """
    await _check(ctx, note_id, "editor")
    row = await store.put(ctx.session, ctx.caller, note_id, title=title, body=body, tags=tags or [],
                          base_version=base_version)
    return DraftSaved(note_id=row.note_id, updated_at=row.updated_at)


@tool(group="notes", title="Get your unsaved edit", scope="read", agents=False, route=Route("GET", "/drafts"))
async def get_draft(ctx: Context, note_id: NoteId | None = None) -> UnsavedEdit:
    """Your unsaved edit of a note (no note_id: of a new note); `draft` is absent when there is none.

    Having none is no error: the editor asks at every opening."""
    await _check(ctx, note_id, "viewer")
    row = await store.load(ctx.session, ctx.caller, note_id)
    return UnsavedEdit(draft=None if row is None else _draft(row))


@tool(group="notes", title="Discard your unsaved edit", scope="write", destructive=True, idempotent=True, agents=False,
      route=Route("DELETE", "/drafts"))
async def discard_draft(ctx: Context, note_id: NoteId | None = None) -> DraftDiscarded:
    """Throw away your unsaved edit of a note (no note_id: of a new note)."""
    await _check(ctx, note_id, "viewer")
    return DraftDiscarded(note_id=note_id, discarded=await store.forget(ctx.session, ctx.caller, note_id))
