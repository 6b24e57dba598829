"""Lists: structured notes whose ``fields`` hold ``{"items": [{"text", "checked"}]}``.

Every change locks the note's row (``SELECT ... FOR UPDATE``) and applies to the items as they
are then, so two agents adding items at once both get theirs in; each change keeps a version.
Items are named by their position (1 is the first) or by their text (case ignored; the first
match), resolved against the list as it was before the call: a call's changes never shift each
other's positions.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from fable_core.db.models import Note
from fable_core.errors import InvalidInput
from fable_core.infra.events import NoteChanged
from fable_core.knowledge.creation import insert_note, new_row
from fable_core.knowledge.entities.fields import MAX_ITEMS, ItemText, ListItem
from fable_core.knowledge.matching import check_duplicate_title
from fable_core.knowledge.saving import save_changes
from fable_core.knowledge.types import Body, NoteId, Tags, Title
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import get_visible

__all__ = ["ListView"]

ItemRef = int | ItemText
_Items = list[ItemText]  # how many a list may hold is checked when they are added
_Refs = list[ItemRef]


class ListView(BaseModel):
    id: int
    title: str
    version: int
    items: list[ListItem]
    open: int = Field(description="Items not checked.")


def _view(note_id: int, title: str, version: int, items: list[ListItem]) -> ListView:
    return ListView(id=note_id, title=title, version=version, items=items,
                    open=sum(1 for item in items if not item.checked))


def _items(note: Note) -> list[ListItem]:
    return [ListItem.model_validate(item) for item in (note.fields or {}).get("items", [])]


async def _list_note(ctx: Context, note_id: int, *, for_update: bool = False) -> Note:
    note = await get_visible(ctx.session, Note, note_id, ctx.caller, for_update=for_update,
                             need="editor" if for_update else "viewer")
    if note.entity != "list":
        raise InvalidInput(f"note {note_id} is a {note.kind}, not a list; create one with create_list",
                           field="note_id", note_id=note_id)
    return note


@tool(group="lists", title="Create a list", scope="write", route=Route("POST", "/lists"))
async def create_list(ctx: Context, title: Title, items: _Items | None = None, body: Body = "",
                      tags: Tags | None = None) -> ListView:
    """Create a checklist (shopping, packing...): a note whose items can be checked."""
    if len(items or []) > MAX_ITEMS:
        raise InvalidInput(f"a list holds at most {MAX_ITEMS} items", field="items")
    await check_duplicate_title(ctx.session, ctx.caller, title, ask=False)
    stored = [ListItem(text=text) for text in items or []]
    fields = {"items": [item.model_dump() for item in stored]}
    summary = await insert_note(ctx.session, new_row(ctx.user_id, title, body, tags, entity="list", fields=fields),
                                writer=ctx.user_id)
    ctx.emit(NoteChanged(ctx.user_id, summary["id"], "created"))
    return _view(summary["id"], summary["title"], summary["version"], stored)


@tool(group="lists", title="Read a list", scope="read", route=Route("GET", "/lists/{note_id}"))
async def get_list(ctx: Context, note_id: NoteId) -> ListView:
    """Read a list's items and how many are open."""
    note = await _list_note(ctx, note_id)
    return _view(note.id, note.title, note.version, _items(note))


@tool(group="lists", title="Change a list", scope="write", route=Route("PATCH", "/lists/{note_id}"))
async def update_list(ctx: Context, note_id: NoteId, add: _Items | None = None, check: _Refs | None = None,
                      uncheck: _Refs | None = None, remove: _Refs | None = None) -> ListView:
    """Add items, check / uncheck / remove items by position (1 = first) or text. Keeps a version."""
    note = await _list_note(ctx, note_id, for_update=True)
    items = _items(note)
    for refs, checked in ((check, True), (uncheck, False)):
        for index in _positions(items, refs):
            items[index].checked = checked
    gone = set(_positions(items, remove))
    items = [item for index, item in enumerate(items) if index not in gone]
    items.extend(ListItem(text=text) for text in add or [])
    if len(items) > MAX_ITEMS:
        raise InvalidInput(f"a list holds at most {MAX_ITEMS} items", field="add")
    fields = {"items": [item.model_dump() for item in items]}
    if fields != note.fields:
        note.fields = fields
        await save_changes(ctx, note, body_changed=False)
    return _view(note.id, note.title, note.version, items)


def _positions(items: list[ListItem], refs: list[int | str] | None) -> list[int]:
    """The indexes of the items ``refs`` name; InvalidInput naming the first that names none."""
    found = []
    for ref in refs or []:
        if isinstance(ref, int):
            if not 1 <= ref <= len(items):
                raise InvalidInput(f"the list has {len(items)} items, no item {ref}", field="item", item=ref)
            found.append(ref - 1)
            continue
        wanted = ref.casefold()
        index = next((i for i, item in enumerate(items) if item.text.casefold() == wanted), None)
        if index is None:
            raise InvalidInput(f"no item {ref!r} in the list", field="item", item=ref)
        found.append(index)
    return found
