"""People and places: structured notes saved by name, their fields merged on every save.

``save_person`` and ``save_place`` create the note, or update it when ``note_id`` is given or
the caller already has a person (place) of that name (compared as titles are: case and spacing
ignored). An update merges the fields given into those stored (``null`` removes one), replaces
the body and tags only when given, and keeps a version like any change to a note. A plain note
(not a task) named by ``note_id`` becomes a person or place. They are notes: searchable (their
fields' words too), linkable as [[Their Name]], read with read_note.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field
from sqlalchemy import func, select
from sqlalchemy.orm import defer

from fable_core.db.models import Note, title_key
from fable_core.errors import InvalidInput
from fable_core.infra.events import NoteChanged
from fable_core.knowledge.creation import insert_note, new_row
from fable_core.knowledge.entities.fields import Entity, Fields, PersonFields, PlaceFields, merged
from fable_core.knowledge.matching import check_duplicate_title
from fable_core.knowledge.saving import save_changes
from fable_core.knowledge.types import Body, NoteId, Tags, Title
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import belongs_to, get_visible, of_user, reach_of, readable
from fable_core.tools.paging import Cursor, decode_cursor, encode_cursor
from fable_core.tools.results import absent_when_none

__all__ = ["EntitySummary", "save_entity"]


class EntitySummary(BaseModel):
    id: int
    title: str
    kind: Entity
    fields: dict[str, Any]
    tags: list[str] = Field(default_factory=list)
    version: int
    created: bool | None = absent_when_none("True when this call created the note.")
    owner: str | None = absent_when_none("Its owner, when someone shared it with you.")


class EntityPage(BaseModel):
    items: list[EntitySummary]
    next_cursor: str | None = absent_when_none("Pass as `cursor` for the next page.")


def entity_summary(note: Note, *, created: bool | None = None) -> EntitySummary:
    return EntitySummary(id=note.id, title=note.title, kind=note.entity,  # type: ignore[arg-type]
                         fields=note.fields or {}, tags=list(note.tags), version=note.version, created=created)


async def save_entity(ctx: Context, entity: Entity, name: str, fields: Fields | None, body: str | None,
                      tags: list[str] | None, note_id: int | None) -> EntitySummary:
    """Create or update a person or place (see the module's docstring)."""
    s = ctx.session
    note: Note | None
    if note_id is not None:
        note = await get_visible(s, Note, note_id, ctx.caller, for_update=True, need="editor")
        _check_convertible(note, entity)
    else:
        note = await s.scalar(select(Note).where(
            of_user(Note, ctx.user_id), Note.entity == entity, Note.title_key == title_key(name))
            .order_by(Note.id).limit(1).with_for_update())
    if note is None:
        await check_duplicate_title(s, ctx.caller, name, ask=False)
        given = merged(entity, None, fields)
        summary = await insert_note(s, new_row(ctx.user_id, name, body or "", tags, entity=entity, fields=given),
                                    writer=ctx.user_id)
        ctx.emit(NoteChanged(ctx.user_id, summary["id"], "created"))
        return EntitySummary(id=summary["id"], title=summary["title"], kind=entity, fields=given,
                             tags=summary["tags"], version=summary["version"], created=True)
    old_title, old_body = note.title, note.body
    if title_key(name) != note.title_key:
        await check_duplicate_title(s, ctx.caller, name, exclude_id=note.id, fuzzy=False, owner_id=note.user_id)
    note.title, note.entity = name, entity
    note.fields = merged(entity, note.fields, fields)
    if body is not None:
        note.body = body
    if tags is not None:
        note.tags = tags
    await save_changes(ctx, note, old_title=old_title, body_changed=note.body != old_body)
    return entity_summary(note, created=False)


def _check_convertible(note: Note, entity: Entity) -> None:
    if note.entity == entity:
        return
    if note.entity is not None or note.status is not None:
        raise InvalidInput(f"note {note.id} is a {note.kind}, not a {entity}", field="note_id", note_id=note.id)


_Target = Annotated[NoteId | None, Field(description="Update this note (a plain note becomes one).")]


@tool(group="people", title="Save a person", scope="write", idempotent=True, route=Route("POST", "/people"))
async def save_person(ctx: Context, person: Title, fields: PersonFields | None = None, body: Body | None = None,
                      tags: Tags | None = None, note_id: _Target = None) -> EntitySummary:
    """Create a person's note, titled with their name, or update the one with this name or `note_id`.

    The fields given are merged in."""
    return await save_entity(ctx, "person", person, fields, body, tags, note_id)


@tool(group="people", title="Save a place", scope="write", idempotent=True, route=Route("POST", "/places"))
async def save_place(ctx: Context, place: Title, fields: PlaceFields | None = None, body: Body | None = None,
                     tags: Tags | None = None, note_id: _Target = None) -> EntitySummary:
    """Create a place's note, titled with its name, or update the one with this name or `note_id`.

    The fields given are merged in."""
    return await save_entity(ctx, "place", place, fields, body, tags, note_id)


@tool(group="people", title="List people, places or lists", scope="read", route=Route("GET", "/entities"))
async def list_entities(ctx: Context, kind: Entity, limit: Annotated[int, Field(ge=1, le=200)] = 50,
                        cursor: Cursor = None) -> EntityPage:
    """Your people, places or lists by name, with their fields.

    search_notes with `kind` finds them by any word."""
    position = decode_cursor(cursor, f"entities:{kind}")
    reach = await reach_of(ctx.session, ctx.caller)
    stmt = select(Note).options(defer(Note.body)).where(readable(Note, reach), Note.entity == kind)
    if position is not None:
        try:
            after = func.row(str(position[0]), int(position[1]))
        except (IndexError, TypeError, ValueError) as e:
            raise InvalidInput("cursor is not valid for this listing", field="cursor") from e
        stmt = stmt.where(func.row(Note.title_key, Note.id) > after)
    notes = (await ctx.session.scalars(stmt.order_by(Note.title_key, Note.id).limit(limit + 1))).all()
    items = [entity_summary(n) for n in notes[:limit]]
    for item, note in zip(items, notes, strict=False):
        if not belongs_to(note.user_id, ctx.user_id):
            item.owner = reach.owner_name(note.user_id)
    more = len(notes) > limit
    last = notes[limit - 1] if more else None
    return EntityPage(items=items, next_cursor=encode_cursor(f"entities:{kind}", [last.title_key, last.id])
                      if last else None)
