"""Bulk import: many notes and tasks in one call, e.g. a Markdown vault or another app's export.

Each note obeys the rules ``create_note`` does: a title may not duplicate one of the caller's
notes (same key, or the fuzzy rule of :mod:`.matching`), task fields imply a task, wikilinks
resolve in both directions (to notes that exist, to notes of the same batch, and links that were
waiting for one of these titles), and every note gets its first version. What differs is the
cost: the work is done per batch (one duplicate query, one insert per table) instead of per
note, so a vault of thousands of notes loads in seconds. A batch is one transaction: it all
lands or none of it does. A duplicate is skipped and reported (``on_duplicate="skip"``) or
fails the whole batch (``"fail"``). The semantic near-duplicate question ``create_note`` asks
is not asked: an import is deliberate.
"""

from __future__ import annotations

import bisect
from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Integer, Text, func, literal, or_, select, true
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import Note, Project, title_key
from fable_core.errors import Conflict, InvalidInput
from fable_core.infra.events import NoteChanged
from fable_core.knowledge.creation import insert_notes, new_row
from fable_core.knowledge.matching import affix_length, is_duplicate, resolve_project, same_key
from fable_core.knowledge.types import MAX_TITLE, Body, Priority, ProjectRef, RecurrenceRule, Status, Tags, Title
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import belongs_to, get_visible, of_user
from fable_core.tools.caller import Caller
from fable_core.tools.results import RowId

__all__ = ["ImportResult", "ImportedNote", "SkippedNote", "import_notes", "store_notes", "taken_titles",
           "unique_titles"]

MAX_BATCH = 500
_CANDIDATES = 50


class ImportedNote(BaseModel):
    """A note or task; fields as in create_note."""

    model_config = ConfigDict(extra="forbid")

    title: Title
    body: Body = ""
    tags: Tags | None = None
    status: Status | None = None
    priority: Priority | None = None
    due_date: date | None = None
    recurrence_rule: RecurrenceRule | None = None
    project_id: RowId | None = None
    project: ProjectRef = None


class SkippedNote(BaseModel):
    index: int = Field(description="Position of the note in `notes`.")
    title: str
    reason: str
    existing_note_id: int | None = Field(None, description="The note it duplicates, if it exists already.")


class ImportResult(BaseModel):
    created: int
    ids: list[int | None] = Field(description="The new note's id for each entry of `notes`; null if skipped.")
    skipped: list[SkippedNote]


@tool(group="data", title="Import notes", scope="write", route=Route("POST", "/notes/import"))
async def import_notes(
    ctx: Context,
    notes: Annotated[list[ImportedNote], Field(min_length=1, max_length=MAX_BATCH)],
    on_duplicate: Literal["skip", "fail"] = "skip",
) -> ImportResult:
    """Import notes and tasks, all or nothing.

    A title duplicating one of the caller's notes or another in the batch is skipped and reported,
    or with on_duplicate="fail" refuses the batch. [[Wikilinks]] resolve within the batch too."""
    return await store_notes(ctx, ctx.session, notes, on_duplicate=on_duplicate)


async def store_notes(
    ctx: Context, s: AsyncSession, notes: list[ImportedNote], *, on_duplicate: Literal["skip", "fail"] = "skip",
    dry_run: bool = False, created_at: list[datetime | None] | None = None, similar: bool = True,
) -> ImportResult:
    """import_notes' work on any number of notes, in session ``s`` (the importers' way in);
    ``dry_run`` checks everything and reports, storing nothing (ids stay null); ``created_at``
    gives each note its creation time (None: now); ``similar=False`` counts only the same title
    as a duplicate, not a very similar one (files, whose titles :func:`unique_titles` made
    distinct)."""
    caller = ctx.caller
    keys = [title_key(n.title) for n in notes]
    clashes = await _duplicates(s, caller, keys) if similar else await _same_titles(s, caller, keys)
    skipped: list[SkippedNote] = []
    taken: list[int] = []
    for i, note in enumerate(notes):
        reason = clashes.get(i)
        if reason is not None:
            skipped.append(SkippedNote(index=i, title=note.title, reason=reason[0], existing_note_id=reason[1]))
        else:
            taken.append(i)
    if skipped and on_duplicate == "fail":
        first = skipped[0]
        raise Conflict(
            f"{len(skipped)} of {len(notes)} notes duplicate a title; first: #{first.index} "
            f"{first.title!r}: {first.reason}. Nothing was imported.",
            duplicates=[d.model_dump() for d in skipped[:50]],
        )
    projects = await _projects(s, caller, [notes[i] for i in taken])
    now = datetime.now(UTC)
    rows = [_row(ctx.user_id, notes[i], projects, now) for i in taken]
    if created_at is not None:
        for i, row in zip(taken, rows, strict=True):
            row["created_at"] = created_at[i] or now
    ids: list[int | None] = [None] * len(notes)
    if rows and not dry_run:
        stored: list[int] = []
        for start in range(0, len(rows), MAX_BATCH):  # links to later batches resolve as they land
            stored += await insert_notes(s, ctx.user_id, rows[start:start + MAX_BATCH], writer=ctx.user_id)
        for i, note_id in zip(taken, stored, strict=True):
            ids[i] = note_id
            ctx.emit(NoteChanged(ctx.user_id, note_id, "created"))
    return ImportResult(created=len(taken), ids=ids, skipped=skipped)


def _own(project: Project, caller: Caller) -> Project:
    """Imported notes are the caller's own, so their projects must be too."""
    if not belongs_to(project.user_id, caller.user_id):
        raise InvalidInput(f"project {project.id} is shared with you: import_notes imports into your own "
                           "projects; add notes to it with create_note", field="project_id")
    return project


def _row(user_id: int, note: ImportedNote, projects: dict[object, int], now: datetime) -> dict[str, Any]:
    if note.recurrence_rule and note.due_date is None:
        raise InvalidInput(f"{note.title!r}: a recurring task needs a due_date to recur from",
                           field="recurrence_rule")
    project = note.project_id if note.project_id is not None else note.project
    return new_row(
        user_id, note.title, note.body, note.tags, status=note.status, priority=note.priority,
        due_date=note.due_date, recurrence_rule=note.recurrence_rule,
        project_id=projects.get(project) if project is not None else None, now=now,
    )


async def _projects(s: AsyncSession, caller: Caller, notes: list[ImportedNote]) -> dict[object, int]:
    """Each distinct project id or name of the batch, checked or resolved once."""
    found: dict[object, int] = {}
    for note in notes:
        if note.project_id is not None and note.project is not None:
            raise InvalidInput(f"{note.title!r}: pass project_id or project (a name), not both",
                               field="project")
        if note.project_id is not None and note.project_id not in found:
            found[note.project_id] = _own(await get_visible(s, Project, note.project_id, caller), caller).id
        elif note.project is not None and note.project not in found:
            found[note.project] = _own(await resolve_project(s, caller, note.project), caller).id
    return found


async def unique_titles(s: AsyncSession, user_id: int, titles: list[str]) -> list[str]:
    """``titles`` made distinct from each other and from the user's notes by exact title key,
    the later of two the same renamed ``Title (2)``, ``(3)``…: what an importer of files does,
    where two titles alike are two notes (a person typing one is warned of a near duplicate; an
    import is not a person typing, and drops nothing)."""
    taken = await taken_titles(s, user_id, [title_key(t) for t in titles])
    final: list[str] = []
    for title in titles:
        candidate, n = title, 1
        while title_key(candidate) in taken:
            n += 1
            suffix = f" ({n})"
            candidate = title[:MAX_TITLE - len(suffix)] + suffix
            taken |= await taken_titles(s, user_id, [title_key(candidate)])  # renamed ones only: rare
        taken.add(title_key(candidate))
        final.append(candidate)
    return final


async def _same_titles(s: AsyncSession, caller: Caller, keys: list[str]) -> dict[int, tuple[str, int | None]]:
    """Index in ``keys`` → why it is a duplicate: the same title key as a note of the user's (by a
    race: importers made them distinct) or as an earlier one of the batch."""
    taken = await taken_titles(s, caller.user_id, keys)
    seen: set[str] = set()
    clashes: dict[int, tuple[str, int | None]] = {}
    for i, key in enumerate(keys):
        if key in taken or key in seen:
            clashes[i] = ("a note with the same title was made meanwhile", None)
        seen.add(key)
    return clashes


async def taken_titles(s: AsyncSession, user_id: int, keys: list[str]) -> set[str]:
    """The keys among ``keys`` a note of the user's has."""
    wanted = [k for k in set(keys) if k]
    if not wanted:
        return set()
    rows = await s.execute(select(Note.title_key).where(of_user(Note, user_id), Note.title_key.in_(wanted)))
    return set(rows.scalars())


async def _duplicates(s: AsyncSession, caller: Caller, keys: list[str]) -> dict[int, tuple[str, int | None]]:
    """Index in ``keys`` → (why it is a duplicate, the existing note's id or None)."""
    existing = await _existing_candidates(s, caller.user_id, keys)
    clashes: dict[int, tuple[str, int | None]] = {}
    accepted: list[str] = []  # kept sorted, with a reversed twin, for the affix lookups below
    accepted_reversed: list[str] = []
    for i, key in enumerate(keys):
        for note_id, title, existing_key in existing.get(i, ()):
            if is_duplicate(existing_key, key):
                how = "the same title" if existing_key == key else "a very similar title"
                clashes[i] = (f"note {note_id} {title!r} already has {how}", note_id)
                break
        else:
            earlier = _earlier_duplicate(key, accepted, accepted_reversed)
            if earlier is not None:
                clashes[i] = (f"an earlier note of this batch has the same or a very similar title ({earlier!r})",
                              None)
            else:
                bisect.insort(accepted, key)
                bisect.insort(accepted_reversed, key[::-1])
    return clashes


def _earlier_duplicate(key: str, keys: list[str], reversed_keys: list[str]) -> str | None:
    if len(key) < 4:
        return key if _starting_with(keys, key, exact=True) else None
    n = affix_length(key)
    for candidate in _starting_with(keys, key[:n]):
        if is_duplicate(candidate, key):
            return candidate
    for candidate in _starting_with(reversed_keys, key[::-1][:n]):
        if is_duplicate(candidate[::-1], key):
            return candidate[::-1]
    return None


def _starting_with(sorted_keys: list[str], prefix: str, *, exact: bool = False) -> list[str]:
    start = bisect.bisect_left(sorted_keys, prefix)
    if exact:
        return [prefix] if start < len(sorted_keys) and sorted_keys[start] == prefix else []
    end = bisect.bisect_left(sorted_keys, _after_prefix(prefix))
    return sorted_keys[start:min(end, start + _CANDIDATES)]


def _after_prefix(prefix: str) -> str:
    """The least string greater than every string starting with ``prefix`` (code-point order,
    which is what ``text_pattern_ops`` compares)."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


async def _existing_candidates(
    s: AsyncSession, user_id: int, keys: list[str]
) -> dict[int, list[tuple[int, str, str]]]:
    """The caller's notes each new key could duplicate: same key, or sharing its first or last
    characters (``affix_length``), found by index range scans, at most 50 per end and key."""
    exact = [(i, key) for i, key in enumerate(keys) if len(key) < 4]
    fuzzy = [(i, key) for i, key in enumerate(keys) if len(key) >= 4]
    found: dict[int, list[tuple[int, str, str]]] = {}
    if exact:
        rows = await s.execute(
            select(Note.id, Note.title, Note.title_key)
            .where(of_user(Note, user_id),
                   or_(*(same_key(Note.title_key, k) for k in {k for _, k in exact}))))
        by_key: dict[str, list[tuple[int, str, str]]] = {}
        for row in rows:
            by_key.setdefault(row.title_key, []).append(tuple(row))  # type: ignore[arg-type]
        for i, key in exact:
            found[i] = by_key.get(key, [])
    if fuzzy:
        starts = [key[:affix_length(key)] for _, key in fuzzy]
        ends = [key[::-1][:affix_length(key)] for _, key in fuzzy]
        for column, affixes in ((Note.title_key, starts), (Note.title_key_reversed, ends)):
            ranges = func.unnest(
                _ints([i for i, _ in fuzzy]), _texts(affixes), _texts([_after_prefix(a) for a in affixes])
            ).table_valued("i", "lo", "hi").render_derived("want")
            candidates = (
                select(Note.id, Note.title, Note.title_key)
                .where(of_user(Note, user_id), column.op("~>=~")(ranges.c.lo), column.op("~<~")(ranges.c.hi))
                .limit(_CANDIDATES).lateral("candidate")
            )
            rows = await s.execute(
                select(ranges.c.i, candidates.c.id, candidates.c.title, candidates.c.title_key)
                .select_from(ranges).join(candidates, true()))
            for i, note_id, title, existing_key in rows:
                found.setdefault(i, []).append((note_id, title, existing_key))
    return found


def _ints(values: list[int]) -> object:
    return literal(values, ARRAY(Integer))


def _texts(values: list[str]) -> object:
    return literal(values, ARRAY(Text))
