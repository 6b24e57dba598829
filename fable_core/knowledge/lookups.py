"""Small read-only lookups the surfaces need beyond the tools: the values MCP completions offer
(searched in the database, never filtered from one page of a tool), notes by title for prompts,
the keyset pages of ``resources/list``, and the notes wikilinks name (for the web UI's rendered
markdown). Every query is scoped through :mod:`fable_core.tools.access`; the surfaces hold no SQL."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import Select, String, Text, cast, func, literal, or_, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import Note, Project, title_key
from fable_core.errors import NotFound
from fable_core.knowledge.matching import name_tier, same_key
from fable_core.knowledge.types import MAX_TITLE
from fable_core.tools.access import Reach, owned_by, reach_of, readable, visible
from fable_core.tools.caller import Caller
from fable_core.tools.runtime import Runtime

__all__ = [
    "FETCH_VALUES",
    "MAX_VALUES",
    "Section",
    "TitledBody",
    "find_note",
    "ids_starting",
    "is_id",
    "note_ids_by_title",
    "note_titles",
    "notes_by_title",
    "project_titles",
    "resource_rows",
    "tag_names",
]

Section = Literal["projects", "notes"]

MAX_VALUES = 100  # the most completion values MCP allows in one answer
FETCH_VALUES = MAX_VALUES + 1  # what a completion lookup returns at most: one more says "more"


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


async def note_titles(fable: Runtime, caller: Caller, typed: str) -> list[str]:
    """Titles of notes the caller can read whose title contains ``typed``, most recently changed first."""
    return await _first_values(fable, caller, lambda reach: (
        select(Note.title)
        .where(readable(Note, reach), Note.title.ilike(f"%{_like(typed)}%"))
        .order_by(Note.updated_at.desc(), Note.id.desc())
    ))


async def project_titles(fable: Runtime, caller: Caller, typed: str) -> list[str]:
    """Titles of the projects ``typed`` names (by :func:`~fable_core.knowledge.matching.name_tier`,
    as a tool naming a project would find them): best first, those starting with it first, A-Z."""
    if len(typed) > MAX_TITLE:
        return []
    async with fable.db.reading() as session:
        reach = await reach_of(session, caller)
        rows = (await session.execute(visible(Project, reach).with_only_columns(Project.id, Project.title))).all()
    wanted = typed.strip().casefold()
    ranked = sorted(((tier, not title.casefold().startswith(wanted), title.casefold(), pid, title)
                     for pid, title in rows if (tier := name_tier(typed, title)) is not None))
    return [r[-1] for r in ranked[:FETCH_VALUES]]


async def tag_names(fable: Runtime, caller: Caller, typed: str) -> list[str]:
    """The caller's tags that start with ``typed``, most used first (as ``list_tags`` orders them).

    Queried here rather than through ``list_tags``, whose ``prefix`` refuses text longer than a
    tag: a completion answers such text with no values, not an error.
    """
    def statement(reach: Reach) -> Select[tuple[str]]:
        tags = select(func.unnest(Note.tags).label("tag")).where(readable(Note, reach)).subquery()
        return (select(tags.c.tag).where(tags.c.tag.like(f"{_like(typed.strip().lower())}%"))
                .group_by(tags.c.tag).order_by(func.count().desc(), tags.c.tag))
    return await _first_values(fable, caller, statement)


async def ids_starting(fable: Runtime, caller: Caller, section: Section, typed: str) -> list[str]:
    """Ids of the caller's notes or projects whose digits start with ``typed``, newest first."""
    model: type[Note | Project] = Note if section == "notes" else Project
    digits = cast(model.id, String)
    return await _first_values(fable, caller, lambda reach: (
        visible(model, reach).with_only_columns(digits)
        .where(digits.like(f"{_like(typed)}%")).order_by(model.id.desc())
    ))


async def _first_values(fable: Runtime, caller: Caller, statement: Callable[[Reach], Select[Any]]) -> list[str]:
    """The first :data:`FETCH_VALUES` strings the statement built for the caller's reach
    selects: one more than an answer holds, which tells whether there are more."""
    async with fable.db.reading() as session:
        stmt = statement(await reach_of(session, caller))
        return list((await session.execute(stmt.limit(FETCH_VALUES))).scalars())


def is_id(ref: str) -> bool:
    """Whether a reference is a row id: ASCII digits only (``str.isdigit`` also admits '²')."""
    return ref.isascii() and ref.isdigit()


async def find_note(fable: Runtime, caller: Caller, ref: str) -> int:
    """A note id from an id or a title (same title key, else an alias, else the closest title)."""
    ref = ref.strip()
    if is_id(ref):
        return int(ref)
    key = title_key(ref)
    async with fable.db.reading() as session:
        reach = await reach_of(session, caller)
        exact = visible(Note, reach).where(same_key(Note.title_key, key)).order_by(Note.id.desc()).limit(1)
        closest = (  # only asked when no title has the same key: the trigram search costs milliseconds
            visible(Note, reach).where(Note.title_key.op("%")(key))
            .order_by(func.similarity(Note.title_key, key).desc(), Note.id.desc()).limit(1)
        )
        note = (await session.execute(exact)).scalar_one_or_none()
        if note is None:
            aliased = await _by_alias(session, reach, caller, {key}, Note.id)
            if aliased:
                return int(aliased[key][0])
            note = (await session.execute(closest)).scalar_one_or_none()
    if note is None:
        raise NotFound(f"no note titled {ref!r}", note=ref)
    return note.id


_NOTE_COLUMNS = (Note.id, Note.title, Note.status, Note.priority, Note.due_date, Note.project_id, Note.tags)


async def resource_rows(
    fable: Runtime, caller: Caller, section: Section, before: int | None, limit: int
) -> list[tuple[Section, dict[str, Any]]]:
    """Up to ``limit`` of the caller's projects, then notes, each newest (highest id) first,
    starting after ``(section, before)``.

    Ids never change, so this keyset order is stable while notes are created, edited or
    deleted between pages (an order by ``updated_at`` would move an edited note past the cursor).
    """
    rows: list[tuple[Section, dict[str, Any]]] = []
    async with fable.db.reading() as session:
        reach = await reach_of(session, caller)
        if section == "projects":
            projects = visible(Project, reach).with_only_columns(Project.id, Project.title, Project.status)
            if before is not None:
                projects = projects.where(Project.id < before)
            found = await session.execute(projects.order_by(Project.id.desc()).limit(limit))
            rows += [("projects", dict(r._mapping)) for r in found]
            before = None
        if len(rows) < limit:
            notes = visible(Note, reach).with_only_columns(*_NOTE_COLUMNS)
            if before is not None:
                notes = notes.where(Note.id < before)
            found_notes = await session.execute(notes.order_by(Note.id.desc()).limit(limit - len(rows)))
            rows += [("notes", {**r._mapping, "kind": "note" if r.status is None else "task"})
                     for r in found_notes]
    return rows


async def note_ids_by_title(fable: Runtime, caller: Caller, keys: set[str]) -> dict[str, int]:
    """Title key → the oldest note with that title the caller can read, their own first, for
    each key (one query). A title only others' unshared notes have stays unresolved."""
    ids: dict[str, int] = {}
    if not keys:
        return ids
    async with fable.db.reading() as session:
        reach = await reach_of(session, caller)
        rows = await session.execute(
            visible(Note, reach).with_only_columns(Note.title_key, Note.id)
            .where(or_(*(same_key(Note.title_key, k) for k in sorted(keys))))
            .order_by(owned_by(Note, caller).is_not(True), Note.id))
        for key, note_id in rows:
            ids.setdefault(key, note_id)
        for key, row in (await _by_alias(session, reach, caller, keys - ids.keys(), Note.id)).items():
            ids[key] = row[0]
    return ids


async def _by_alias(session: AsyncSession, reach: Reach, caller: Caller, keys: set[str],
                    *columns: Any) -> dict[str, tuple[Any, ...]]:
    """Alias key → ``columns`` of the oldest note with that alias the caller can read, their
    own first: the names no title answers (:func:`~fable_core.knowledge.wikilinks.link_target`)."""
    if not keys:
        return {}
    rows = await session.execute(
        visible(Note, reach).with_only_columns(Note.alias_keys, *columns)
        .where(Note.alias_keys.is_not(None), Note.alias_keys.op("&&")(literal(sorted(keys), ARRAY(Text))))
        .order_by(owned_by(Note, caller).is_not(True), Note.id))
    found: dict[str, tuple[Any, ...]] = {}
    for aliases, *values in rows:
        for key in keys.intersection(aliases):
            found.setdefault(key, tuple(values))
    return found


@dataclass(frozen=True, slots=True)
class TitledBody:
    """A note an ``![[embed]]`` shows: its id, title and (the start of) its body."""

    id: int
    title: str
    body: str


EMBED_CHARS = 20_000  # the most of a note's body an embed shows


async def notes_by_title(fable: Runtime, caller: Caller, keys: set[str]) -> dict[str, TitledBody]:
    """Title key → the note :func:`note_ids_by_title` would resolve it to, with its title and
    the first :data:`EMBED_CHARS` of its body (one query): the notes ``![[Title]]`` embeds."""
    found: dict[str, TitledBody] = {}
    if not keys:
        return found
    async with fable.db.reading() as session:
        reach = await reach_of(session, caller)
        rows = await session.execute(
            visible(Note, reach).with_only_columns(Note.title_key, Note.id, Note.title,
                                                   func.left(Note.body, EMBED_CHARS))
            .where(or_(*(same_key(Note.title_key, k) for k in sorted(keys))))
            .order_by(owned_by(Note, caller).is_not(True), Note.id))
        for key, note_id, title, body in rows:
            found.setdefault(key, TitledBody(note_id, title, body))
        aliased = await _by_alias(session, reach, caller, keys - found.keys(), Note.id, Note.title,
                                  func.left(Note.body, EMBED_CHARS))
        found.update((key, TitledBody(*row)) for key, row in aliased.items())
    return found
