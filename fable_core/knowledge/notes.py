"""Notes (and tasks, which are notes with a status): create, read, change, find.

Every new note is stored by :mod:`.creation` and every change goes through
:func:`save_changes`; both keep a version, sync wikilinks and announce the change, so no tool
can forget one of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints
from sqlalchemy import (
    ColumnElement,
    Text,
    and_,
    any_,
    bindparam,
    case,
    delete,
    exists,
    func,
    literal,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.access import (
    OWNER_PARAM,
    fetch_visible,
    get_visible,
    owned_by,
    owned_by_param,
    visible_row,
)
from fable_core.db.models import Milestone, Note, NoteLink
from fable_core.errors import Conflict, InvalidInput, NotFound
from fable_core.events import NoteChanged
from fable_core.knowledge import wikilinks
from fable_core.knowledge.creation import insert_note, new_row
from fable_core.knowledge.filters import escape_like, tag_clause, tag_params
from fable_core.knowledge.matching import check_duplicate_title, project_ref
from fable_core.knowledge.paging import decode_cursor, encode_cursor
from fable_core.knowledge.sections import Section, find_section, outline
from fable_core.knowledge.types import (
    Body,
    Cursor,
    Kind,
    Limit,
    NoteId,
    Priority,
    ProjectRef,
    RecurrenceRule,
    RowId,
    Status,
    Tag,
    Tags,
    Title,
)
from fable_core.knowledge.versions import snapshot
from fable_core.knowledge.views import (
    BacklinkItem,
    BacklinkPage,
    Deleted,
    NoteDetail,
    NotePage,
    NoteSummary,
    SearchHit,
    SearchResults,
    TagCount,
    TagList,
)
from fable_core.tools import Context, Route, tool

__all__ = ["SUMMARY_COLUMNS", "save_changes", "set_placement"]

ClearableField = Literal[
    "priority", "due_date", "project", "milestone", "parent", "recurrence_rule"
]
_CLEAR_COLUMNS = {
    "priority": "priority",
    "due_date": "due_date",
    "project": "project_id",
    "milestone": "milestone_id",
    "parent": "parent_id",
    "recurrence_rule": "recurrence_rule",
}


# The columns of a NoteSummary, read as plain rows: listing and reading are the hottest reads of
# every surface, and building ORM objects for them cost more than the query.
SUMMARY_COLUMNS = (
    Note.id, Note.title, case((Note.status.is_(None), "note"), else_="task").label("kind"), Note.tags,
    Note.status, Note.priority, Note.due_date, Note.project_id, Note.milestone_id, Note.parent_id,
    Note.recurrence_rule, Note.version, Note.updated_at,
)


# --- shared mechanics -------------------------------------------------------------------------


@dataclass(slots=True)
class Placement:
    """Where a note not stored yet will sit (it has no id, so no note is inside it):
    what :func:`set_placement` fills in for ``create_note``."""

    id: int | None = None
    project_id: int | None = None
    milestone_id: int | None = None
    parent_id: int | None = None


async def set_placement(
    ctx: Context,
    note: Note | Placement,
    *,
    project_id: int | None = None,
    project: str | None = None,
    milestone_id: int | None = None,
    parent_id: int | None = None,
) -> None:
    """Attach ``note`` to a project (by id or name), milestone and parent the caller can see."""
    s, caller = ctx.session, ctx.caller
    chosen = await project_ref(s, caller, project_id, project)
    if chosen is not None and chosen.id != note.project_id:
        note.project_id, note.milestone_id = chosen.id, None
    if milestone_id is not None:
        milestone = await get_visible(s, Milestone, milestone_id, caller)
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
        await get_visible(s, Note, parent_id, caller)
        await _refuse_parent_cycle(s, note, parent_id)
        note.parent_id = parent_id


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


def _check_task_fields(recurrence_rule: str | None, due_date: date | None) -> None:
    if recurrence_rule and due_date is None:
        raise InvalidInput("a recurring task needs a due_date to recur from", field="recurrence_rule")


async def save_changes(ctx: Context, note: Note, *, old_title: str | None = None,
                       body_changed: bool = True) -> None:
    """Persist a change to ``note``: version snapshot, wikilinks, rename rewrites, change event."""
    s = ctx.session
    note.version += 1
    await s.flush()
    await snapshot(s, note)
    if body_changed:
        await wikilinks.sync_links(s, note)
    if old_title is not None and old_title != note.title:
        await wikilinks.resolve_pending(s, note)
        for source in await wikilinks.rename_links(s, note, old_title):
            source.version += 1  # its body changed: it keeps a version like any other change
            await s.flush()
            await snapshot(s, source)
            ctx.emit(NoteChanged(note.user_id, source.id, "updated"))
    ctx.emit(NoteChanged(note.user_id, note.id, "updated"))


# --- tools ------------------------------------------------------------------------------------


@tool(title="Create a note or task", scope="write", transaction="phases", route=Route("POST", "/notes"))
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
    confirm: bool = False,
) -> NoteSummary:
    """Create a note; give it a `status` (or a priority, due date or recurrence) to make it a task.

    Refused with a conflict when the caller already has a note with the same or a very similar
    title: update that note instead. Link to other notes with [[Their Title]]. A note whose text
    nearly repeats an existing one answers needs_confirmation: repeat with `confirm` to create it.

    Args:
        title: The title (1-300 characters); must not duplicate an existing note's.
        body: Markdown body.
        status: todo, in_progress, done or cancelled; makes the note a task.
        priority: none, low, medium or high (implies a task).
        due_date: ISO date (implies a task).
        project_id: Put the note in this project.
        project: Or name the project; resolved by exact, partial, then fuzzy match.
        milestone_id: Milestone within the project (sets the project if none given).
        parent_id: Parent note or task, e.g. for a sub-task.
        confirm: Create it even though a note with nearly the same text exists.
    """
    from fable_core.assistant.search import check_semantic_duplicate, duplicate_probe

    probe = None if confirm else await duplicate_probe(ctx, title, body)  # remote: before the transaction
    async with ctx.transaction() as session:
        await check_duplicate_title(session, ctx.caller, title)
        await check_semantic_duplicate(ctx, probe)
        _check_task_fields(recurrence_rule, due_date)
        row = new_row(ctx.user_id, title, body, tags, status=status, priority=priority,
                      due_date=due_date, recurrence_rule=recurrence_rule)
        if any(ref is not None for ref in (project_id, project, milestone_id, parent_id)):
            placed = Placement()
            await set_placement(ctx, placed, project_id=project_id, project=project,
                                milestone_id=milestone_id, parent_id=parent_id)
            row.update(project_id=placed.project_id, milestone_id=placed.milestone_id,
                       parent_id=placed.parent_id)
        summary = await insert_note(session, row)
        ctx.emit(NoteChanged(ctx.user_id, summary["id"], "created"))
    return NoteSummary.model_validate(summary)


@tool(title="Read a note", scope="read", route=Route("GET", "/notes/{note_id}"))
async def read_note(
    ctx: Context,
    note_id: NoteId,
    section: Annotated[str | None, StringConstraints(max_length=300)] = None,
    offset: Annotated[int, Field(ge=0)] = 0,
    max_chars: Annotated[int | None, Field(ge=100, le=1_000_000)] = None,
) -> NoteDetail:
    """Read a note or task with its body; read a long one in parts with `section` or `max_chars`.

    `sections` in the result lists the headings; `next_offset` is set when the body was cut,
    to continue with `offset`.

    Args:
        section: Only the part of the body under this heading (e.g. "Decisions").
        offset: Character offset to start from (within the section, if one is given).
        max_chars: Return at most this many characters of body.
    """
    row = await fetch_visible(ctx.session, _READ_STATEMENT, Note, note_id, ctx.caller)
    detail = row._asdict()
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
_READ_STATEMENT = visible_row(Note, *SUMMARY_COLUMNS, Note.body, Note.created_at, Note.completed_at)


@tool(title="Update a note or task", scope="write", idempotent=True,
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
    clear: list[ClearableField] | None = None,
    expected_version: Annotated[int | None, Field(ge=1)] = None,
) -> NoteSummary:
    """Change some fields of a note or task; omitted fields stay as they are. Keeps a version.

    To change part of the body without resending it, use edit_note. Setting status "done"
    completes the task (a recurring one gets its next occurrence).

    Args:
        tags: Replace all tags.
        add_tags: Tags to add to the existing ones.
        remove_tags: Tags to remove.
        clear: Fields to empty: priority, due_date, project, milestone, parent, recurrence_rule.
        expected_version: Refuse (conflict) if the note changed since this version was read.
    """
    from fable_core.knowledge.tasks import apply_status

    note = await get_visible(ctx.session, Note, note_id, ctx.caller, for_update=True)
    if expected_version is not None and note.version != expected_version:
        raise Conflict(
            f"note {note_id} is at version {note.version}, not {expected_version}; re-read it",
            note_id=note_id, version=note.version,
        )
    old_title, old_body = note.title, note.body
    if title is not None and wikilinks.title_key(title) != note.title_key:
        await check_duplicate_title(ctx.session, ctx.caller, title, exclude_id=note.id, fuzzy=False)
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
        note.tags = tags
    if add_tags or remove_tags:
        note.tags = [t for t in dict.fromkeys([*note.tags, *(add_tags or [])])
                     if t not in set(remove_tags or [])]
    if status is None and note.status is None and (priority or due_date or recurrence_rule):
        status = "todo"
    await set_placement(ctx, note, project_id=project_id, project=project,
                        milestone_id=milestone_id, parent_id=parent_id)
    if status is not None:
        await apply_status(ctx, note, status)
    _check_task_fields(note.recurrence_rule, note.due_date)
    await save_changes(ctx, note, old_title=old_title, body_changed=note.body != old_body)
    return NoteSummary.model_validate(note)


@tool(title="Edit part of a note", scope="write", route=Route("POST", "/notes/{note_id}/edit"))
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
    """Change part of a note's body without resending it all. Keeps a version.

    Operations: append / prepend `text`; replace `find` with `text` (refused if `find` is
    missing, or found more than once without `replace_all`); replace_section replaces what is
    under the heading `section` (the heading stays); append_to_section adds `text` at its end.
    """
    note = await get_visible(ctx.session, Note, note_id, ctx.caller, for_update=True)
    if expected_version is not None and note.version != expected_version:
        raise Conflict(f"note {note_id} is at version {note.version}, not {expected_version}",
                       note_id=note_id, version=note.version)
    note.body = _edited(note.body, operation, text, find, replace_all, section)
    await save_changes(ctx, note)
    return NoteSummary.model_validate(note)


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


@tool(title="Delete a note or task", scope="write", destructive=True, idempotent=False,
      route=Route("DELETE", "/notes/{note_id}"))
async def delete_note(ctx: Context, note_id: NoteId) -> Deleted:
    """Delete a note or task with its versions and work log. Its sub-notes are kept (detached);
    links to it become unresolved again."""
    note = await get_visible(ctx.session, Note, note_id, ctx.caller)
    await ctx.session.execute(delete(Note).where(Note.id == note.id))
    ctx.emit(NoteChanged(note.user_id, note.id, "deleted"))
    return Deleted(id=note_id)


async def _check_refs(ctx: Context, *, project_id: int | None = None, project: str | None = None,
                      milestone_id: int | None = None, parent_id: int | None = None) -> int | None:
    """Refuse filters naming rows the caller cannot see (NotFound, as everywhere); returns the
    project id a project name resolved to."""
    chosen = await project_ref(ctx.session, ctx.caller, project_id, project)
    if milestone_id is not None:
        await get_visible(ctx.session, Milestone, milestone_id, ctx.caller)
    if parent_id is not None:
        await get_visible(ctx.session, Note, parent_id, ctx.caller)
    return chosen.id if chosen else None


def _filters(
    ctx: Context, *, tag: str | None, kind: str, status: list[str] | None,
    priority: list[str] | None, project_id: int | None, milestone_id: int | None,
    parent_id: int | None, due_before: date | None, due_after: date | None,
) -> list[ColumnElement[bool]]:
    """The listings' WHERE clauses; every value is a named bind parameter, so that
    ``list_notes`` can build its statement once per combination of filters and run it again
    with new values (``_filter_params`` gives them under the same names)."""
    where: list[ColumnElement[bool]] = [owned_by_param(Note, ctx.caller)]
    if tag is not None:
        where.append(tag_clause(tag))
    if kind == "note":
        where.append(Note.status.is_(None))
    elif kind == "task":
        where.append(Note.status.is_not(None))
    if status:
        where.append(Note.status == any_(bindparam("status", status, type_=ARRAY(Text))))
    if priority:
        where.append(Note.priority == any_(bindparam("priority", priority, type_=ARRAY(Text))))
    for name, column, value in (("project_id", Note.project_id, project_id),
                                ("milestone_id", Note.milestone_id, milestone_id),
                                ("parent_id", Note.parent_id, parent_id)):
        if value is not None:
            where.append(column == bindparam(name, value))
    if due_before is not None:
        where.append(Note.due_date < bindparam("due_before", due_before))
    if due_after is not None:
        where.append(Note.due_date > bindparam("due_after", due_after))
    return where


def _filter_params(ctx: Context, **filters: Any) -> dict[str, Any]:
    """The bind parameters of ``_filters(ctx, **filters)``: the filters given (not None, not
    empty), under the names ``_filters`` binds them to."""
    params: dict[str, Any] = {OWNER_PARAM: ctx.user_id}
    for name, value in filters.items():
        if name == "tag":
            if value is not None:
                params.update(tag_params(value))
        elif name != "kind" and value is not None and value != []:
            params[name] = value
    return params


_SORTS: dict[str, tuple[Any, bool]] = {
    "updated": (Note.updated_at, True),
    "created": (Note.created_at, True),
    "title": (Note.title_key, False),
    "due": (func.coalesce(Note.due_date, literal(date(9999, 12, 31))), False),
}


@tool(title="List notes and tasks", scope="read", route=Route("GET", "/notes"))
async def list_notes(
    ctx: Context,
    tag: Tag | None = None,
    kind: Kind = "all",
    status: list[Status] | None = None,
    priority: list[Priority] | None = None,
    project_id: RowId | None = None,
    project: ProjectRef = None,
    milestone_id: RowId | None = None,
    parent_id: RowId | None = None,
    due_before: date | None = None,
    due_after: date | None = None,
    text: Annotated[str | None, StringConstraints(strip_whitespace=True, min_length=1, max_length=500)] = None,
    sort: Literal["updated", "created", "title", "due"] = "updated",
    limit: Limit = 50,
    cursor: Cursor = None,
) -> NotePage:
    """List notes and tasks (without bodies), filtered and sorted, one page at a time.

    Args:
        tag: Only notes with this tag or a tag under it ('work' also matches 'work/acme').
        kind: note, task or all.
        project_id: Only notes of this project.
        project: Or name the project (exact, partial, then fuzzy match).
        text: Only notes whose title or body contains these words.
        sort: updated (newest first), created (newest first), title (A-Z) or due (soonest first).
    """
    scoped = await _check_refs(ctx, project_id=project_id, project=project,
                               milestone_id=milestone_id, parent_id=parent_id)
    filters = {"tag": tag, "kind": kind, "status": status, "priority": priority, "project_id": scoped,
               "milestone_id": milestone_id, "parent_id": parent_id, "due_before": due_before,
               "due_after": due_after}
    params = _filter_params(ctx, **filters)
    if text:
        params["text"] = text
    position = decode_cursor(cursor, f"notes:{sort}")
    if position is not None:
        params["after_key"], params["after_id"] = _cursor_value(sort, position[0]), position[1]
    params["page"] = limit + 1
    shape = (frozenset(params), kind, sort)
    statement = _LIST_STATEMENTS.get(shape)
    if statement is None:
        statement = _list_statement(ctx, filters, params, sort)
        if len(_LIST_STATEMENTS) < 1024:
            _LIST_STATEMENTS[shape] = statement
    # on the session's connection: rows only, without the ORM's result machinery
    result = await (await ctx.session.connection()).execute(statement, params)
    names = tuple(result.keys())
    rows = result.all()
    next_cursor = None
    if len(rows) > limit:
        last = rows[limit - 1]
        next_cursor = encode_cursor(f"notes:{sort}", [last.sort_key, last.id])
    # one validation call for the page: pydantic loops over the items in Rust
    return NotePage.model_validate(
        {"items": [dict(zip(names, row, strict=True)) for row in rows[:limit]], "next_cursor": next_cursor})


# list_notes' statements by the filters present, the kind and the sort: building a statement
# (and its cache key) cost as much as running it, and a handful of shapes serve nearly every call.
_LIST_STATEMENTS: dict[tuple[frozenset[str], str, str], Any] = {}


def _list_statement(ctx: Context, filters: dict[str, Any], params: dict[str, Any], sort: str) -> Any:
    where = _filters(ctx, **filters)
    if "text" in params:
        where.append(Note.search_vector.op("@@")(
            func.websearch_to_tsquery("english", bindparam("text", params["text"]))))
    key, descending = _SORTS[sort]
    if "after_key" in params:
        after = func.row(bindparam("after_key", params["after_key"], type_=key.type),
                         bindparam("after_id", params["after_id"]))
        where.append(func.row(key, Note.id) < after if descending else func.row(key, Note.id) > after)
    order = (key.desc(), Note.id.desc()) if descending else (key.asc(), Note.id.asc())
    return (select(*SUMMARY_COLUMNS, key.label("sort_key")).where(and_(*where)).order_by(*order)
            .limit(bindparam("page", params["page"])))


def _cursor_value(sort: str, raw: Any) -> Any:
    from datetime import datetime

    try:
        if sort in ("updated", "created"):
            return datetime.fromisoformat(raw)
        if sort == "due":
            return date.fromisoformat(raw)
        return str(raw)
    except (TypeError, ValueError) as e:
        raise InvalidInput("cursor is not valid for this listing", field="cursor") from e


_HEADLINE = "StartSel=**,StopSel=**,MaxWords=24,MinWords=8,MaxFragments=2,FragmentDelimiter= … "


@tool(title="Search notes", scope="read", transaction="phases", route=Route("GET", "/search"))
async def search_notes(
    ctx: Context,
    query: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=500)],
    tag: Tag | None = None,
    kind: Kind = "all",
    project_id: RowId | None = None,
    limit: Annotated[int, Field(ge=1, le=50)] = 10,
    cursor: Cursor = None,
) -> SearchResults:
    """Search notes and tasks by words, best matches first, with highlighted snippets.

    Supports "quoted phrases", OR and -excluded words. Titles weigh more than bodies; when no
    word matches, near-miss titles (typos) are returned instead. With an embedding model, notes
    close in meaning are found too (`mode` "hybrid"; "keyword" when words alone were used).
    """
    from fable_core.assistant.search import query_vector

    position = decode_cursor(cursor, "search")
    offset = int(position[0]) if position else 0
    vector = await query_vector(ctx, query)  # remote: before the session
    async with ctx.reading():
        return await _search(ctx, query, vector, tag=tag, kind=kind, project_id=project_id,
                             offset=offset, limit=limit)


async def _search(ctx: Context, query: str, vector: list[float] | None, *, tag: str | None, kind: Kind,
                  project_id: int | None, offset: int, limit: int) -> SearchResults:
    from fable_core.assistant.search import hybrid_search

    await _check_refs(ctx, project_id=project_id)
    where = _filters(ctx, tag=tag, kind=kind, status=None, priority=None, project_id=project_id,
                     milestone_id=None, parent_id=None, due_before=None, due_after=None)
    hybrid = await hybrid_search(ctx, query, vector, where, offset=offset, limit=limit)
    if hybrid is not None:
        return hybrid
    tsq = func.websearch_to_tsquery("english", query)
    rank = func.ts_rank_cd(Note.search_vector, tsq, 1)
    ranked = (
        select(Note.id, rank.label("score"))
        .where(and_(*where), Note.search_vector.op("@@")(tsq))
        .order_by(rank.desc(), Note.id.desc())
        .offset(offset).limit(limit + 1)
        .subquery()
    )
    headline = func.ts_headline("english", func.left(Note.body, 20_000), tsq, _HEADLINE)
    rows = (await ctx.session.execute(
        select(Note, ranked.c.score, headline.label("snippet"))
        .join(ranked, ranked.c.id == Note.id)
        .order_by(ranked.c.score.desc(), Note.id.desc())
    )).all()
    if not rows and offset == 0:
        rows = await _fuzzy_title_hits(ctx, where, query, limit)
    items = [
        SearchHit(**NoteSummary.model_validate(note).model_dump(), snippet=_snippet(note, snippet),
                  score=round(float(score), 4))
        for note, score, snippet in rows[:limit]
    ]
    more = len(rows) > limit
    return SearchResults(query=query, mode="keyword", items=items,
                         next_cursor=encode_cursor("search", [offset + limit]) if more else None)


async def _fuzzy_title_hits(ctx: Context, where: list[Any], query: str, limit: int) -> list[Any]:
    key = wikilinks.title_key(query)
    if len(key) < 3:
        return []
    sim = func.similarity(Note.title_key, key)
    return list((await ctx.session.execute(
        select(Note, sim, literal(""))
        .where(and_(*where), Note.title_key.op("%")(key))
        .order_by(Note.title_key.op("<->")(key), Note.id.desc()).limit(limit)
    )).all())


def _snippet(note: Note, headline: str) -> str:
    if headline and "**" in headline:
        return headline
    return (note.body[:160] + "…") if len(note.body) > 160 else note.body


@tool(title="Convert between note and task", scope="write", idempotent=True,
      route=Route("POST", "/notes/{note_id}/convert"))
async def convert_note(ctx: Context, note_id: NoteId, to: Literal["task", "note"]) -> NoteSummary:
    """Make a note a task (status todo) or a task a plain note (clears status, priority, due
    date and recurrence; the text is kept)."""
    note = await get_visible(ctx.session, Note, note_id, ctx.caller, for_update=True)
    if to == "task" and note.status is None:
        note.status = "todo"
    elif to == "note" and note.status is not None:
        note.status = note.priority = note.due_date = note.recurrence_rule = None
        note.completed_at = None
    else:
        return NoteSummary.model_validate(note)
    await save_changes(ctx, note, body_changed=False)
    return NoteSummary.model_validate(note)


@tool(title="List tags", scope="read", route=Route("GET", "/tags"))
async def list_tags(
    ctx: Context,
    prefix: Annotated[str | None, StringConstraints(strip_whitespace=True, max_length=64)] = None,
    limit: Annotated[int, Field(ge=1, le=500)] = 100,
    cursor: Cursor = None,
) -> TagList:
    """List the caller's tags with how many notes carry each, most used first.

    Args:
        prefix: Only tags starting with this (e.g. 'work/').
    """
    position = decode_cursor(cursor, "tags")
    offset = int(position[0]) if position else 0
    tag = func.unnest(Note.tags).label("tag")
    inner = select(tag).where(owned_by(Note, ctx.caller)).subquery()
    stmt = select(inner.c.tag, func.count().label("n")).group_by(inner.c.tag)
    if prefix:
        stmt = stmt.where(inner.c.tag.like(f"{escape_like(prefix.lower())}%"))
    rows = (await ctx.session.execute(
        stmt.order_by(text("n DESC"), inner.c.tag).offset(offset).limit(limit + 1)
    )).all()
    return TagList(
        items=[TagCount(tag=t, count=n) for t, n in rows[:limit]],
        next_cursor=encode_cursor("tags", [offset + limit]) if len(rows) > limit else None,
    )


@tool(title="Find notes that link here", scope="read", route=Route("GET", "/notes/{note_id}/backlinks"))
async def get_backlinks(ctx: Context, note_id: NoteId, limit: Limit = 50, cursor: Cursor = None) -> BacklinkPage:
    """List the notes whose body links to this note with [[its title]], newest first."""
    note = await get_visible(ctx.session, Note, note_id, ctx.caller)
    position = decode_cursor(cursor, "backlinks")
    stmt = (
        select(Note)
        .where(owned_by(Note, ctx.caller),
               exists().where(NoteLink.source_id == Note.id, NoteLink.target_id == note.id))
        .order_by(Note.id.desc()).limit(limit + 1)
    )
    if position is not None:
        stmt = stmt.where(Note.id < int(position[0]))
    sources = (await ctx.session.execute(stmt)).scalars().all()
    items = [
        BacklinkItem(id=src.id, title=src.title, kind=src.kind,
                     snippet=_link_line(src.body, note.title_key))
        for src in sources[:limit]
    ]
    more = len(sources) > limit
    return BacklinkPage(items=items, next_cursor=encode_cursor("backlinks", [items[-1].id]) if more else None)


def _link_line(body: str, key: str) -> str:
    for line in body.splitlines():
        if any(k == key for k in wikilinks.parse_links(line)):
            return line.strip()[:300]
    return ""
