"""Notes (and tasks, which are notes with a status): create, read, change, find.

Every new note is stored by :mod:`.creation` and every change goes through
:func:`save_changes`; both keep a version, sync wikilinks, add the note's words to the
vocabulary (search corrects misspelt words with them) and announce the change, so no tool can
forget one of them.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from fable_core.db.models import Note
from fable_core.errors import Conflict, InvalidInput, NotFound
from fable_core.infra.events import NoteChanged
from fable_core.knowledge import wikilinks
from fable_core.knowledge.assignees import Assignee, choose_assignee
from fable_core.knowledge.creation import insert_note, new_row
from fable_core.knowledge.listing import SUMMARY_COLUMNS, mark_shared, summary_of
from fable_core.knowledge.matching import check_duplicate_title
from fable_core.knowledge.saving import Placement, apply_status, check_task_fields, save_changes, set_placement
from fable_core.knowledge.sections import Section, find_section, outline
from fable_core.knowledge.trash.bin import throw_away
from fable_core.knowledge.types import (
    MAX_BODY,
    Body,
    NoteId,
    Priority,
    ProjectRef,
    RecurrenceRule,
    Status,
    Tag,
    Tags,
    Title,
)
from fable_core.knowledge.vectors import check_semantic_duplicate, duplicate_probe
from fable_core.knowledge.views import NoteDetail, NoteSummary
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import (
    belongs_to,
    check_delete_note,
    fetch_visible,
    get_visible,
    may_change_note,
    reach_of,
    visible_row,
)
from fable_core.tools.results import Deleted, RowId

__all__: list[str] = []

ClearableField = Literal[
    "priority", "due_date", "project", "milestone", "parent", "recurrence_rule", "assignee"
]

_CLEAR_COLUMNS = {
    "priority": "priority",
    "due_date": "due_date",
    "project": "project_id",
    "milestone": "milestone_id",
    "parent": "parent_id",
    "recurrence_rule": "recurrence_rule",
    "assignee": "assignee_id",
}


@tool(group="notes", title="Create a note or task", scope="write", transaction="phases", route=Route("POST", "/notes"))
async def create_note(
    ctx: Context,
    title: Title,
    body: Body = "",
    tags: Tags | None = None,
    status: Status | None = None,
    priority: Priority | None = None,
    due_date: date | None = None,
    recurrence_rule: RecurrenceRule | None = None,
    project_id: RowId | None = None,
    project: ProjectRef = None,
    milestone_id: RowId | None = None,
    parent_id: RowId | None = None,
    assignee: Assignee | None = None,
    confirm: bool = False,
) -> NoteSummary:
    """Create a note; a `status`, priority, due date or recurrence makes it a task.

    A note is refused (conflict) if another note has this title: update that one; a near-duplicate
    title or text answers needs_confirmation: repeat with `confirm`. Tasks may repeat titles. Link
    notes with [[Their Title]].

    Args:
        body: Markdown.
        milestone_id: Sets the project too.
        assignee: Makes it a task.
        confirm: Create despite a near-duplicate.
    """
    probe = None if confirm else await duplicate_probe(ctx, title, body)  # remote: before the transaction
    async with ctx.transaction() as session:
        placed = Placement()
        if any(ref is not None for ref in (project_id, project, milestone_id, parent_id)):
            await set_placement(ctx, placed, project_id=project_id, project=project,
                                milestone_id=milestone_id, parent_id=parent_id)
        owner = placed.user_id or ctx.user_id  # in a project shared with the caller: its owner's
        task = status is not None or bool(priority or due_date or recurrence_rule or assignee)
        assigned = None if assignee is None else await choose_assignee(
            ctx, assignee, owner_id=owner, note_id=None, project_id=placed.project_id)
        if not task:  # a task may repeat a title ("call mom" every week): only notes keep the rule
            await check_duplicate_title(session, ctx.caller, title, owner_id=owner, confirmed=confirm)
        await check_semantic_duplicate(ctx, probe)
        check_task_fields(recurrence_rule, due_date)
        row = new_row(owner, title, body, tags, status=status or ("todo" if assigned else None), priority=priority,
                      due_date=due_date, recurrence_rule=recurrence_rule, project_id=placed.project_id,
                      milestone_id=placed.milestone_id, parent_id=placed.parent_id,
                      assignee_id=assigned.id if assigned else None)
        summary = await insert_note(session, row, writer=ctx.user_id)
        if assigned is not None:
            summary["assignee"] = assigned.username
        ctx.emit(NoteChanged(owner, summary["id"], "created"))
        reach = None if belongs_to(owner, ctx.user_id) else await reach_of(session, ctx.caller)
    return NoteSummary.model_validate(mark_shared([{**summary, "owner_id": owner}], reach)[0])


@tool(group="notes", title="Read a note", scope="read", route=Route("GET", "/notes/{note_id}"))
async def read_note(
    ctx: Context,
    note_id: NoteId,
    section: Annotated[str | None, StringConstraints(max_length=300)] = None,
    offset: Annotated[int, Field(ge=0, le=MAX_BODY)] = 0,
    max_chars: Annotated[int | None, Field(ge=100, le=1_000_000)] = None,
) -> NoteDetail:
    """Read a note or task with its body; a long one in parts with `section` or `max_chars`.

    The result lists `sections`; a cut body has `next_offset` to pass as `offset`.

    Args:
        section: Only the body under this heading.
    """
    row, shared = await fetch_visible(ctx.session, _READ_STATEMENT, Note, note_id, ctx.caller)
    detail = {**row._asdict(), **shared}
    body = text_ = detail["body"]
    sections = outline(body)
    if section is not None:
        found = find_section(text_, section)
        if found is None:
            names = [s.title for s in sections]
            raise NotFound(f"note {note_id} has no section {section!r}; its sections: {names}",
                           sections=names)
        text_ = text_[found.content_start:found.end]
    part = text_[offset: offset + max_chars if max_chars else None]
    end = offset + len(part)
    detail.update(body=part, body_length=len(body), offset=offset,
                  next_offset=end if end < len(text_) else None, section=section,
                  sections=[sec.title for sec in sections])
    return NoteDetail.model_validate(detail)


# read_note's statement, built once: a NoteDetail's columns, as a plain row
_READ_STATEMENT = visible_row(Note, *SUMMARY_COLUMNS, Note.body, Note.created_at, Note.completed_at,
                              Note.fields, Note.inline_tags)


@tool(group="notes", title="Update a note or task", scope="write", idempotent=True,
      route=Route("PATCH", "/notes/{note_id}"))
async def update_note(
    ctx: Context,
    note_id: NoteId,
    title: Title | None = None,
    body: Body | None = None,
    tags: Tags | None = None,
    add_tags: Tags | None = None,
    remove_tags: list[Tag] | None = None,
    status: Status | None = None,
    priority: Priority | None = None,
    due_date: date | None = None,
    recurrence_rule: RecurrenceRule | None = None,
    project_id: RowId | None = None,
    project: ProjectRef = None,
    milestone_id: RowId | None = None,
    parent_id: RowId | None = None,
    assignee: Assignee | None = None,
    clear: list[ClearableField] | None = None,
    expected_version: Annotated[int | None, Field(ge=1)] = None,
) -> NoteSummary:
    """Change the fields given of a note or task; keeps a version.

    For part of the body, use edit_note. Status "done" completes a task (a recurring one gets its
    next occurrence).

    Args:
        tags: Replace all tags (#tags in the body stay).
        assignee: Of a task; clear with clear=["assignee"].
        clear: Fields to empty.
        expected_version: Conflict unless the note is still at this version.
    """
    note = await get_visible(ctx.session, Note, note_id, ctx.caller, for_update=True, need="editor")
    if expected_version is not None and note.version != expected_version:
        raise Conflict(
            f"note {note_id} is at version {note.version}, not {expected_version}; re-read it",
            note_id=note_id, version=note.version,
        )
    old_title, old_body = note.title, note.body
    stays_note = (note.status is None or "status" in (clear or [])) and status is None
    if title is not None and wikilinks.title_key(title) != note.title_key and stays_note:
        await check_duplicate_title(ctx.session, ctx.caller, title, exclude_id=note.id, fuzzy=False,
                                    owner_id=note.user_id)
    for column in (_CLEAR_COLUMNS[f] for f in clear or []):
        setattr(note, column, None)
    if "project" in (clear or []):
        note.milestone_id = None
    values = {"title": title, "body": body, "priority": priority, "due_date": due_date,
              "recurrence_rule": recurrence_rule}
    for column, value in values.items():
        if value is not None:
            setattr(note, column, value)
    if tags is not None:
        note.tags = tags  # and the body's #tags (the model keeps them)
    if add_tags or remove_tags:
        _check_removable(note, remove_tags or [])
        note.tags = [t for t in dict.fromkeys([*note.tags, *(add_tags or [])])
                     if t not in set(remove_tags or [])]
    if note.entity is not None and (status or priority or due_date or recurrence_rule or assignee):
        raise InvalidInput(f"note {note_id} is a {note.entity}: it cannot be a task", field="status")
    if status is None and note.status is None and (priority or due_date or recurrence_rule or assignee):
        status = "todo"
    await set_placement(ctx, note, project_id=project_id, project=project,
                        milestone_id=milestone_id, parent_id=parent_id)
    moved = project_id is not None or project is not None or milestone_id is not None or "project" in (clear or [])
    await _assign(ctx, note, assignee, moved=moved)
    if status is not None:
        await apply_status(ctx, note, status)
    check_task_fields(note.recurrence_rule, note.due_date)
    await save_changes(ctx, note, old_title=old_title, body_changed=note.body != old_body)
    return await summary_of(ctx, note)


def _check_removable(note: Note, tags: list[str]) -> None:
    """Refuse to remove a tag the body gives as ``#tag`` (it would stay): the text must go."""
    written = [t for t in tags if t in (note.inline_tags or ())]
    if written:
        raise InvalidInput(f"tag {written[0]!r} is written in note {note.id}'s text as #{written[0]}: "
                           "remove it from the body to remove the tag", field="remove_tags", tags=written)


async def _assign(ctx: Context, note: Note, assignee: str | None, *, moved: bool) -> None:
    """Assign ``note`` to ``assignee`` (which makes it a task); a task moved elsewhere keeps its
    assignee only if they may still change it there (else it is nobody's)."""
    if assignee is not None:
        note.assignee_id = (await choose_assignee(ctx, assignee, owner_id=note.user_id, note_id=note.id,
                                                  project_id=note.project_id)).id
    elif moved and note.assignee_id is not None and not await may_change_note(
            ctx.session, note.assignee_id, owner_id=note.user_id, note_id=note.id, project_id=note.project_id):
        note.assignee_id = None  # moved out of their reach: nobody's now, rather than invisible to its assignee


@tool(group="notes", title="Edit part of a note", scope="write", route=Route("POST", "/notes/{note_id}/edit"))
async def edit_note(
    ctx: Context,
    note_id: NoteId,
    operation: Literal["append", "prepend", "replace", "replace_section", "append_to_section"],
    text: Body,
    find: Annotated[str | None, StringConstraints(min_length=1, max_length=100_000)] = None,
    replace_all: bool = False,
    section: Annotated[str | None, StringConstraints(min_length=1, max_length=300)] = None,
    expected_version: Annotated[int | None, Field(ge=1)] = None,
) -> NoteSummary:
    """Change part of a note's body; keeps a version.

    append/prepend `text`; replace `find` with `text` (refused if absent, or found more than once
    without `replace_all`); replace_section replaces what is under the heading `section`;
    append_to_section adds `text` at its end."""
    note = await get_visible(ctx.session, Note, note_id, ctx.caller, for_update=True, need="editor")
    if expected_version is not None and note.version != expected_version:
        raise Conflict(f"note {note_id} is at version {note.version}, not {expected_version}",
                       note_id=note_id, version=note.version)
    note.body = _edited(note.body, operation, text, find, replace_all, section)
    await save_changes(ctx, note)
    return await summary_of(ctx, note)


def _edited(body: str, operation: str, text_: str, find: str | None, replace_all: bool,
            section: str | None) -> str:
    if operation == "append":
        return body + ("\n" if body and not body.endswith("\n") else "") + text_
    if operation == "prepend":
        return text_ + ("\n" if text_ and not text_.endswith("\n") else "") + body
    if operation == "replace":
        if find is None:
            raise InvalidInput("operation 'replace' needs `find`", field="find")
        count = body.count(find)
        if count == 0:
            raise InvalidInput(f"{find[:80]!r} does not occur in the note", field="find")
        if count > 1 and not replace_all:
            raise InvalidInput(
                f"{find[:80]!r} occurs {count} times; pass replace_all=true or a longer `find`",
                field="find", occurrences=count)
        return body.replace(find, text_) if replace_all else body.replace(find, text_, 1)
    if section is None:
        raise InvalidInput(f"operation {operation!r} needs `section`", field="section")
    found = find_section(body, section)
    if found is None:
        raise InvalidInput(f"no section {section!r}; sections: {[s.title for s in outline(body)]}",
                           field="section")
    return _into_section(body, found, text_, replace=operation == "replace_section")


def _into_section(body: str, found: Section, text_: str, *, replace: bool) -> str:
    """Put ``text_`` at the end of a section's content (or instead of it), keeping the blank
    lines that separate it from the next heading and a line break on either side."""
    content_end = found.content_start + len(body[found.content_start:found.end].rstrip("\n"))
    before = body[:found.content_start] if replace else body[:content_end]
    after = body[content_end:]
    text_ = text_.rstrip("\n")
    lead = "" if not before or before.endswith("\n") else "\n"
    trail = "" if not after or after.startswith("\n") else "\n"
    return before + lead + text_ + trail + after


@tool(group="notes", title="Delete a note or task", scope="write", destructive=True, idempotent=False,
      route=Route("DELETE", "/notes/{note_id}"))
async def delete_note(ctx: Context, note_id: NoteId) -> Deleted:
    """Move a note or task to its owner's trash, restorable with restore_note for some days.

    Its sub-notes are kept (detached); links to it dangle until it is restored."""
    note = await get_visible(ctx.session, Note, note_id, ctx.caller)
    await check_delete_note(ctx.session, ctx.caller, note)
    await throw_away(ctx.session, note, ctx.user_id)
    ctx.emit(NoteChanged(note.user_id, note.id, "deleted"))
    return Deleted(id=note_id)


@tool(group="notes", title="Convert between note and task", scope="write", idempotent=True,
      route=Route("POST", "/notes/{note_id}/convert"))
async def convert_note(ctx: Context, note_id: NoteId, to: Literal["task", "note"]) -> NoteSummary:
    """Make a note a task (status todo) or a task a plain note (clearing status, priority, due date, recurrence)."""
    note = await get_visible(ctx.session, Note, note_id, ctx.caller, for_update=True, need="editor")
    if note.entity is not None:
        raise InvalidInput(f"note {note_id} is a {note.entity}: it cannot be a task", field="to")
    if to == "task" and note.status is None:
        note.status = "todo"
    elif to == "note" and note.status is not None:
        note.status = note.priority = note.due_date = note.recurrence_rule = None
        note.completed_at = note.assignee_id = None
    else:
        return await summary_of(ctx, note)
    await save_changes(ctx, note, body_changed=False)
    return await summary_of(ctx, note)


