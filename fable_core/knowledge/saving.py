"""How a change to a note is stored, whichever tool made it: one module, so that notes, tasks
and versions share it without importing each other.

:func:`save_changes` keeps a version, syncs wikilinks, rewrites links to a renamed note,
adds the words of the notes it changed to the vocabulary (search corrects typos with them) and
announces the change; :func:`set_placement` puts a note in a project, milestone and under a
parent the caller can see; :func:`apply_status` moves a task through its statuses and, on completion, spawns a
recurring task's next occurrence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime

from sqlalchemy import exists, inspect, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import Milestone, Note, User
from fable_core.errors import InvalidInput
from fable_core.infra.events import NoteChanged
from fable_core.knowledge import vocabulary, wikilinks
from fable_core.knowledge.creation import insert_note, new_row
from fable_core.knowledge.drafts import store as drafts
from fable_core.knowledge.image_refs import copy_image_refs, sync_image_refs
from fable_core.knowledge.matching import project_ref
from fable_core.knowledge.recurrence import next_occurrence
from fable_core.knowledge.types import Status
from fable_core.knowledge.views import NoteSummary
from fable_core.tools import Context
from fable_core.tools.access import belongs_to, get_visible, require, same_space

__all__ = ["Placement", "apply_status", "check_task_fields", "save_changes", "set_placement", "snapshot"]

_COUNT = re.compile(r"(?<![A-Z])COUNT=(\d+)")


@dataclass(slots=True)
class Placement:
    """Where a note not stored yet will sit (it has no id, so no note is inside it):
    what :func:`set_placement` fills in for ``create_note``. ``user_id`` is whose notes it
    joins: the owner of the project, milestone or parent it is placed in (None: the caller's)."""

    id: int | None = None
    user_id: int | None = None
    project_id: int | None = None
    milestone_id: int | None = None
    parent_id: int | None = None


def _same_space(note: Note | Placement, owner_id: int, what: str) -> None:
    """A note lives among its owner's notes: its project, milestone and parent are its owner's
    too (a note in a project shared with you is the project owner's)."""
    if not same_space(note.user_id, owner_id):
        raise InvalidInput(f"{what} is among other notes than this note's owner's: a note can only be placed "
                           "in its owner's projects and milestones and under their notes",
                           field=what.split()[0] + "_id")
    note.user_id = owner_id


async def set_placement(
    ctx: Context,
    note: Note | Placement,
    *,
    project_id: int | None = None,
    project: str | None = None,
    milestone_id: int | None = None,
    parent_id: int | None = None,
) -> None:
    """Attach ``note`` to a project (by id or name), milestone and parent the caller may edit,
    all among the note's owner's (or, for a new note, the first one's owner's)."""
    s, caller = ctx.session, ctx.caller
    chosen = await project_ref(s, caller, project_id, project)
    if chosen is not None:
        await require(s, caller, chosen, "editor")
        _same_space(note, chosen.user_id, f"project {chosen.id}")
    if chosen is not None and chosen.id != note.project_id:
        note.project_id, note.milestone_id = chosen.id, None
    if milestone_id is not None:
        milestone = await get_visible(s, Milestone, milestone_id, caller, need="editor")
        _same_space(note, milestone.user_id, f"milestone {milestone_id}")
        if note.project_id is None:
            note.project_id = milestone.project_id
        elif milestone.project_id != note.project_id:
            raise InvalidInput(
                f"milestone {milestone_id} belongs to project {milestone.project_id}, "
                f"not project {note.project_id}",
                field="milestone_id",
            )
        note.milestone_id = milestone.id
    if parent_id is not None:
        if parent_id == note.id:
            raise InvalidInput("a note cannot be its own parent", field="parent_id")
        parent = await get_visible(s, Note, parent_id, caller)
        _same_space(note, parent.user_id, f"parent {parent_id}")
        await _refuse_parent_cycle(s, note, parent_id)
        note.parent_id = parent_id
    if isinstance(note, Placement) and not belongs_to(note.user_id or caller.user_id, caller.user_id) \
            and note.project_id is None:
        raise InvalidInput("a note among someone else's notes must be in one of their projects shared with you: "
                           "pass that project too", field="project_id")


async def _refuse_parent_cycle(s: AsyncSession, note: Note | Placement, parent_id: int) -> None:
    if note.id is None:
        return
    ancestors = select(Note.id, Note.parent_id).where(Note.id == parent_id).cte(recursive=True)
    ancestors = ancestors.union_all(
        select(Note.id, Note.parent_id).join(ancestors, Note.id == ancestors.c.parent_id)
    )
    if await s.scalar(select(exists().where(ancestors.c.id == note.id))):
        raise InvalidInput(f"note {parent_id} is inside note {note.id}: that would be a cycle",
                           field="parent_id")


def check_task_fields(recurrence_rule: str | None, due_date: date | None) -> None:
    if recurrence_rule and due_date is None:
        raise InvalidInput("a recurring task needs a due_date to recur from", field="recurrence_rule")


async def save_changes(ctx: Context, note: Note, *, old_title: str | None = None,
                       body_changed: bool = True) -> None:
    """Persist a change to ``note``: version snapshot, wikilinks, rename rewrites, vocabulary,
    the saver's edit draft of it gone, change event."""
    s = ctx.session
    note.version += 1
    aliases_changed = inspect(note).attrs.alias_keys.history.has_changes()  # the body's front matter
    await s.flush()
    await snapshot(s, note)
    if body_changed:
        await wikilinks.sync_links(s, note)
        await sync_image_refs(s, note.id, note.body, ctx.caller.user_id)
    if aliases_changed:
        await wikilinks.sync_aliases(s, note)
    rewritten: list[Note] | None = None
    if old_title is not None and old_title != note.title:
        rewritten = await _rename(ctx, note, old_title)
    if body_changed or rewritten is not None:  # one statement for all: new words inserted in one order
        await vocabulary.add(s, [note.id, *(source.id for source in rewritten or [])])
    await drafts.forget(s, ctx.caller, note.id)  # the saver's unsaved edit of it is saved now
    ctx.emit(NoteChanged(note.user_id, note.id, "updated"))


async def _rename(ctx: Context, note: Note, old_title: str) -> list[Note]:
    """Resolve the links waiting for ``note``'s new title and rewrite the links to its old one;
    returns the notes whose links were rewritten, each with a new version."""
    s = ctx.session
    await wikilinks.resolve_pending(s, note)
    rewritten = await wikilinks.rename_links(s, note, old_title)
    for source in rewritten:
        source.version += 1  # its body changed: it keeps a version like any other change
        await s.flush()
        await snapshot(s, source)
        ctx.emit(NoteChanged(note.user_id, source.id, "updated"))
    return rewritten


async def snapshot(session: AsyncSession, note: Note) -> None:
    """Record ``note`` as it is now (flushed) under its current version number, with what
    changed from the version before (read where it is, in one statement: no body travels)."""
    await session.execute(_SNAPSHOT, {"note_id": note.id})


def _lines_not_in(body: str, other: str) -> str:
    """SQL counting the lines of ``body`` that ``other`` lacks (as multisets: a moved line is
    no change); 0 for a first version (no ``p``) or an unchanged body."""
    return (f"CASE WHEN p.id IS NULL OR p.body = n.body THEN 0 ELSE (SELECT count(*) FROM ("
            f"SELECT unnest(string_to_array({body}, E'\\n')) EXCEPT ALL "
            f"SELECT unnest(string_to_array({other}, E'\\n'))) AS lines) END")


_SNAPSHOT = text(f"""
    INSERT INTO note_versions (note_id, user_id, version, title, body, tags, body_length, title_changed,
                               lines_added, lines_removed, tags_added, tags_removed, fields, fields_changed)
    SELECT n.id, n.user_id, n.version, n.title, n.body, n.tags, length(n.body),
           coalesce(p.title <> n.title, false),
           {_lines_not_in("n.body", "p.body")}, {_lines_not_in("p.body", "n.body")},
           coalesce(ARRAY(SELECT t FROM unnest(n.tags) AS t WHERE NOT t = ANY(p.tags)), '{{}}'),
           coalesce(ARRAY(SELECT t FROM unnest(p.tags) AS t WHERE NOT t = ANY(n.tags)), '{{}}'),
           n.fields, p.id IS NOT NULL AND p.fields IS DISTINCT FROM n.fields
    FROM notes n LEFT JOIN note_versions p ON p.note_id = n.id AND p.version = n.version - 1
    WHERE n.id = :note_id
""")


def _following_rule(rule: str) -> str:
    """The rule as seen from the next occurrence: one fewer left when it has a COUNT."""
    return _COUNT.sub(lambda m: f"COUNT={max(int(m.group(1)) - 1, 1)}", rule)


async def apply_status(ctx: Context, note: Note, status: Status) -> NoteSummary | None:
    """Set ``note``'s status; on completion stamp it and spawn the next occurrence (returned)."""
    previous = note.status
    note.status = status
    if status != "done":
        note.completed_at = None
        return None
    if previous == "done":
        return None
    note.completed_at = datetime.now(UTC)
    if not (note.recurrence_rule and note.due_date):
        return None
    following = next_occurrence(note.recurrence_rule, note.due_date)
    if following is None:
        return None
    successor = await insert_note(ctx.session, new_row(
        note.user_id, note.title, note.body, list(note.tags), status="todo", priority=note.priority,
        due_date=following, recurrence_rule=_following_rule(note.recurrence_rule),
        project_id=note.project_id, milestone_id=note.milestone_id, parent_id=note.parent_id,
        assignee_id=note.assignee_id,  # the same person does the next one
    ), writer=None)
    await copy_image_refs(ctx.session, note.id, successor["id"])  # the same embeds, by the same writers
    note.recurrence_rule = None
    ctx.emit(NoteChanged(note.user_id, successor["id"], "created"))
    if note.assignee_id is not None:
        assignee = await ctx.session.get(User, note.assignee_id)
        successor["assignee"] = assignee.username if assignee is not None else None
    return NoteSummary.model_validate(successor)
