"""Small read-only lookups the MCP surface needs beyond the tools: note titles for completions
and prompts. Every query is scoped through :mod:`fable_core.access`."""

from __future__ import annotations

from sqlalchemy import func, select

from fable_core.access import owned_by, visible
from fable_core.caller import Caller
from fable_core.db.models import Note, title_key
from fable_core.errors import NotFound
from fable_core.runtime import Fable

__all__ = ["MAX_VALUES", "find_note", "note_titles"]

MAX_VALUES = 100  # the most completion values MCP allows in one answer


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


async def note_titles(fable: Fable, caller: Caller, typed: str) -> list[str]:
    """Titles of notes whose title contains ``typed``, most recently changed first."""
    stmt = (
        select(Note.title)
        .where(owned_by(Note, caller), Note.title.ilike(f"%{_like(typed)}%"))
        .order_by(Note.updated_at.desc(), Note.id.desc())
        .limit(MAX_VALUES)
    )
    async with fable.db.transaction() as session:
        return list((await session.execute(stmt)).scalars())


async def find_note(fable: Fable, caller: Caller, ref: str) -> int:
    """A note id from an id or a title (same title key, else the closest title)."""
    ref = ref.strip()
    if ref.isdigit():
        return int(ref)
    key = title_key(ref)
    similarity = func.similarity(Note.title_key, key)
    stmt = (
        visible(Note, caller)
        .where((Note.title_key == key) | Note.title_key.op("%")(key))
        .order_by((Note.title_key != key), similarity.desc(), Note.id.desc())
        .limit(1)
    )
    async with fable.db.transaction() as session:
        note = (await session.execute(stmt)).scalar_one_or_none()
    if note is None:
        raise NotFound(f"no note titled {ref!r}", note=ref)
    return note.id
