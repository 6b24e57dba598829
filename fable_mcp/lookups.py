"""Small read-only lookups the MCP surface needs beyond the tools: note titles for completions
and prompts, the keyset pages of ``resources/list``. Every query is scoped through
:mod:`fable_core.access`."""

from __future__ import annotations

from typing import Any, Literal

from sqlalchemy import func, select

from fable_core.access import owned_by, visible
from fable_core.caller import Caller
from fable_core.db.models import Note, Project, title_key
from fable_core.errors import NotFound
from fable_core.knowledge.matching import same_key
from fable_core.runtime import Fable

__all__ = ["MAX_VALUES", "Section", "find_note", "is_id", "note_titles", "resource_rows"]

Section = Literal["projects", "notes"]

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


def is_id(ref: str) -> bool:
    """Whether a reference is a row id: ASCII digits only (``str.isdigit`` also admits '²')."""
    return ref.isascii() and ref.isdigit()


async def find_note(fable: Fable, caller: Caller, ref: str) -> int:
    """A note id from an id or a title (same title key, else the closest title)."""
    ref = ref.strip()
    if is_id(ref):
        return int(ref)
    key = title_key(ref)
    exact = visible(Note, caller).where(same_key(Note.title_key, key)).order_by(Note.id.desc()).limit(1)
    closest = (  # only asked when no title has the same key: the trigram search costs milliseconds
        visible(Note, caller).where(Note.title_key.op("%")(key))
        .order_by(func.similarity(Note.title_key, key).desc(), Note.id.desc()).limit(1)
    )
    async with fable.db.reading() as session:
        note = (await session.execute(exact)).scalar_one_or_none()
        if note is None:
            note = (await session.execute(closest)).scalar_one_or_none()
    if note is None:
        raise NotFound(f"no note titled {ref!r}", note=ref)
    return note.id


_NOTE_COLUMNS = (Note.id, Note.title, Note.status, Note.priority, Note.due_date, Note.project_id, Note.tags)


async def resource_rows(
    fable: Fable, caller: Caller, section: Section, before: int | None, limit: int
) -> list[tuple[Section, dict[str, Any]]]:
    """Up to ``limit`` of the caller's projects, then notes, each newest (highest id) first,
    starting after ``(section, before)``.

    Ids never change, so this keyset order is stable while notes are created, edited or
    deleted between pages (an order by ``updated_at`` would move an edited note past the cursor).
    """
    rows: list[tuple[Section, dict[str, Any]]] = []
    async with fable.db.reading() as session:
        if section == "projects":
            stmt = visible(Project, caller).with_only_columns(Project.id, Project.title, Project.status)
            if before is not None:
                stmt = stmt.where(Project.id < before)
            found = await session.execute(stmt.order_by(Project.id.desc()).limit(limit))
            rows += [("projects", dict(r._mapping)) for r in found]
            before = None
        if len(rows) < limit:
            stmt = visible(Note, caller).with_only_columns(*_NOTE_COLUMNS)
            if before is not None:
                stmt = stmt.where(Note.id < before)
            found = await session.execute(stmt.order_by(Note.id.desc()).limit(limit - len(rows)))
            rows += [("notes", {**r._mapping, "kind": "note" if r.status is None else "task"})
                     for r in found]
    return rows
