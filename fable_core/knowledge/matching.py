"""Fuzzy matching of titles and names: duplicate notes, projects named in words.

Duplicate rule, among notes (a task may repeat a title, "call mom" every week, and share a
note's): the same title key (case and punctuation ignored) is refused (Conflict); a title at
least 82 % similar (``difflib`` ratio over title keys) asks for confirmation (NeedsConfirmation,
the match in ``details['match']``) unless the caller confirmed. Titles told apart by what
names a day are never near-duplicates: numbers ("Standup 2026-12-01" / "-02"), weekdays,
months and relative days ("Call Anna monday" / "... tuesday", "Pay rent June" / "... July").
Titles sharing a prefix or suffix are the candidates (two index range scans); difflib decides,
as in the system Fable grew from.

Project names resolve in four steps: exact (case-insensitive), the name inside a title, a title
inside the name, then similarity >= 0.55. More than one candidate at the first step that finds
any is ambiguous: the error lists them.
"""

from __future__ import annotations

import math
import re
from difflib import SequenceMatcher
from typing import Any

from sqlalchemy import and_, bindparam, select, union
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import Note, Project, title_key
from fable_core.errors import Conflict, InvalidInput, NeedsConfirmation, NotFound
from fable_core.tools.access import OWNER_PARAM, belongs_to, get_visible, owned_by_param, reach_of, visible
from fable_core.tools.caller import Caller

__all__ = [
    "DUPLICATE_RATIO",
    "PROJECT_RATIO",
    "affix_length",
    "check_duplicate_title",
    "is_duplicate",
    "name_tier",
    "project_ref",
    "resolve_project",
    "same_key",
]

DUPLICATE_RATIO = 0.82
# A title differing from another in one place shares >= 41 % of its characters with it at
# one end when the two are >= 82 % alike; 40 % keeps a margin.
AFFIX_SHARE = 0.4
_CANDIDATES = 50
PROJECT_RATIO = 0.55


def _ratio(a: str, b: str) -> float:
    return SequenceMatcher(None, a, b).ratio()


_DAY_WORDS = (
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "mon", "tue", "tues", "wed",
    "thu", "thur", "thurs", "fri", "sat", "sun", "january", "february", "march", "april", "may", "june", "july",
    "august", "september", "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug",
    "sep", "sept", "oct", "nov", "dec", "today", "tomorrow", "yesterday", "tonight", "weekend", "morning",
    "afternoon", "evening", "night", "week", "month", "year", "q1", "q2", "q3", "q4",
)
_MARKERS = re.compile(r"\d+|\b(?:" + "|".join(sorted(_DAY_WORDS, key=len, reverse=True)) + r")\b")


def _markers(key: str) -> list[str]:
    """What tells two otherwise alike titles apart as different days or items: numbers, weekday
    and month names, relative days."""
    return _MARKERS.findall(key)


def _near_duplicate(a: str, b: str) -> bool:
    """Similar enough, and not told apart by a number, a weekday or a month ("Standup
    2026-12-01" vs "...-02", "Gym monday" vs "Gym tuesday")."""
    return _markers(a) == _markers(b) and _ratio(a, b) >= DUPLICATE_RATIO


def affix_length(key: str) -> int:
    """How many leading (or trailing) characters a duplicate candidate must share with ``key``."""
    return max(3, math.ceil(AFFIX_SHARE * len(key)))


def is_duplicate(existing_key: str, key: str, *, fuzzy: bool = True) -> bool:
    """The duplicate rule for two title keys (see the module's docstring)."""
    return existing_key == key or (fuzzy and len(key) >= 4 and _near_duplicate(existing_key, key))


def same_key(column: Any, key: Any) -> Any:
    """``column = key`` for a title key column, written ``key <= column <= key`` in the
    pattern operators only its (user_id, key) btree index knows. The trigram GiST index on
    ``title_key`` answers ``=`` too, and the planner prefers it although at 100k notes it reads
    thousands of pages (milliseconds) where the btree reads three."""
    return and_(column.op("~>=~")(key), column.op("~<=~")(key))


def _like_prefix(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


async def check_duplicate_title(
    session: AsyncSession, caller: Caller, title: str, *, exclude_id: int | None = None, fuzzy: bool = True,
    owner_id: int | None = None, confirmed: bool = False, ask: bool = True,
) -> None:
    """Refuse ``title`` when it duplicates one of the notes (not tasks: a task may repeat a title,
    "call mom" every week) of ``owner_id`` (the caller's by default: the rule applies per owner)
    that the caller can see: Conflict for the same title; for a very similar one NeedsConfirmation (``ask``, unless
    ``confirmed``) or Conflict (not ``ask``: tools that take no confirmation). A note of
    someone else's that the caller cannot see never refuses a title: that would tell them it
    exists.

    Fuzzy candidates are the titles sharing this one's first or last 40 % (see ``AFFIX_SHARE``):
    two index range scans whatever the number of notes; difflib then decides.
    """
    key = title_key(title)
    fuzzy = fuzzy and len(key) >= 4 and not (ask and confirmed)
    owner = caller.user_id if owner_id is None else owner_id
    params: dict[str, object] = {OWNER_PARAM: owner}
    if exclude_id is not None:
        params["exclude_id"] = exclude_id
    if fuzzy:
        n = affix_length(key)
        params["prefix"], params["suffix"] = _like_prefix(key[:n]), _like_prefix(key[::-1][:n])
    else:
        params["key"] = key
    statement = _DUPLICATE_STATEMENTS[fuzzy, exclude_id is not None]
    result = await (await session.connection()).execute(statement, params)
    rows = sorted(result.all(), key=lambda r: r[2] != key)
    if not belongs_to(owner, caller.user_id):
        reach = await reach_of(session, caller)
        rows = [r for r in rows if reach.note_level(owner, r[0], r[3])]
    for note_id, existing, existing_key, _ in rows:
        if existing_key == key:
            raise Conflict(
                f"note {note_id} {existing!r} already has the same title; update it with update_note "
                f"(note_id={note_id}) or choose a different title",
                existing_note_id=note_id, existing_title=existing,
            )
        if fuzzy and _near_duplicate(existing_key, key):
            if not ask:
                raise Conflict(
                    f"note {note_id} {existing!r} already has a very similar title; update it with "
                    f"update_note (note_id={note_id}) or choose a different title",
                    existing_note_id=note_id, existing_title=existing,
                )
            raise NeedsConfirmation(
                f"A similar note exists: {existing!r} (id {note_id}); update it instead, or repeat "
                f"with confirm=true to create this one anyway",
                requires_confirmation=True, match={"id": note_id, "title": existing},
            )


def _duplicate_statement(fuzzy: bool, excluding: bool) -> Any:
    """check_duplicate_title's query, with bind parameters: built once per kind of check."""
    columns = (Note.id, Note.title, Note.title_key, Note.project_id)
    mine = [owned_by_param(Note), Note.status.is_(None)]
    if excluding:
        mine.append(Note.id != bindparam("exclude_id"))
    if not fuzzy:
        return select(*columns).where(*mine, same_key(Note.title_key, bindparam("key"))).limit(1)
    prefix = select(*columns).where(*mine, Note.title_key.like(bindparam("prefix")))
    suffix = select(*columns).where(*mine, Note.title_key_reversed.like(bindparam("suffix")))
    return union(prefix.limit(_CANDIDATES), suffix.limit(_CANDIDATES))


# by (fuzzy, excluding a note): building the query cost more Python time than running it
_DUPLICATE_STATEMENTS = {
    (fuzzy, excluding): _duplicate_statement(fuzzy, excluding) for fuzzy in (False, True) for excluding in (False, True)
}


def name_tier(wanted: str, title: str) -> int | None:
    """How a typed project name matches a project title, the one rule every surface uses
    (naming a project to a tool, completing one, searching for one): 1 the same title, 2 the name
    inside the title, 3 the title inside the name, 4 alike (ratio >= PROJECT_RATIO); None no match.
    Case does not matter. Lower is a better match."""
    wanted, title = wanted.strip().casefold(), title.casefold()
    if wanted == title:
        return 1
    if wanted in title:
        return 2
    if title and title in wanted:
        return 3
    if wanted and _ratio(title, wanted) >= PROJECT_RATIO:
        return 4
    return None


async def resolve_project(session: AsyncSession, caller: Caller, name: str) -> Project:
    """Find a project the caller can see by name; NotFound or InvalidInput (ambiguous)
    otherwise. Names are unique per owner, so a name may match one of the caller's projects
    and one shared with them: their own wins."""
    wanted = name.strip().casefold()
    if not wanted:
        raise InvalidInput("project name is empty", field="project")
    reach = await reach_of(session, caller)
    projects = (
        await session.execute(visible(Project, reach).order_by(Project.id))
    ).scalars().all()
    tiers = {p.id: name_tier(wanted, p.title) for p in projects}
    for tier in (1, 2, 3, 4):
        found = [p for p in projects if tiers[p.id] == tier]
        own = [p for p in found if belongs_to(p.user_id, caller.user_id)]
        if len(own) == 1 or len(found) == 1:
            return (own or found)[0]
        if len(found) > 1:
            names = ", ".join(f"{p.title!r} (id {p.id}{'' if belongs_to(p.user_id, caller.user_id) else ', shared'})"
                              for p in found[:10])
            raise InvalidInput(
                f"project name {name!r} is ambiguous: it matches {names}; pass project_id instead",
                field="project",
                candidates=[{"id": p.id, "title": p.title} for p in found[:10]],
            )
    raise NotFound(f"no project matches {name!r}", project=name)


async def project_ref(session: AsyncSession, caller: Caller, project_id: int | None,
                      project: str | None) -> Project | None:
    """The project a tool was pointed at by id or by name (not both), or None for neither."""
    if project_id is not None and project is not None:
        raise InvalidInput("pass project_id or project (a name), not both", field="project")
    if project is not None:
        return await resolve_project(session, caller, project)
    if project_id is not None:
        return await get_visible(session, Project, project_id, caller)
    return None
