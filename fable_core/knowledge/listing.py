"""Listing notes and tasks: one page at a time, filtered and sorted, without bodies.

Listing is the hottest read of every surface, so its statements are built once per shape (the
filters present, the kind, the sort) and run again with new bound values, and rows are read
plain (no ORM objects) and validated as one page.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import StringConstraints
from sqlalchemy import bindparam, case, func, literal, select, union_all

from fable_core.db.models import Note
from fable_core.errors import InvalidInput
from fable_core.knowledge.assignees import (
    ASSIGNEE_COLUMN,
    AssigneeFilter,
    AssigneeMode,
    assignee_clause,
    assignee_filter,
    assignee_name,
)
from fable_core.knowledge.filters import check_refs, filter_params, note_filters, once
from fable_core.knowledge.plaintext import parsed_chars, plain_text
from fable_core.knowledge.types import Kind, Priority, ProjectRef, Status, Tag
from fable_core.knowledge.views import NotePage, NoteSummary
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import Reach, belongs_to, permission_name, reach_of, reach_parts, readable
from fable_core.tools.paging import Cursor, Limit, decode_cursor, encode_cursor
from fable_core.tools.results import RowId

__all__ = ["SUMMARY_COLUMNS", "mark_shared", "summary_of"]

# The columns of a NoteSummary, read as plain rows: listing and reading are the hottest reads of
# every surface, and building ORM objects for them cost more than the query.
SUMMARY_COLUMNS = (
    Note.id, Note.title, func.coalesce(Note.entity, case((Note.status.is_(None), "note"), else_="task")).label("kind"),
    Note.tags,
    Note.status, Note.priority, Note.due_date, Note.project_id, Note.milestone_id, Note.parent_id,
    Note.recurrence_rule, Note.version, Note.updated_at, Note.user_id.label("owner_id"), ASSIGNEE_COLUMN,
)


def mark_shared(items: list[dict[str, Any]], reach: Reach | None) -> list[dict[str, Any]]:
    """Summaries (with their ``owner_id``) of notes others shared with the caller get their
    ``owner`` and the caller's ``permission``; the caller's own notes stay as they are."""
    if reach is None or reach.alone:
        return items
    for item in items:
        owner_id = item.get("owner_id")
        if owner_id is not None and not belongs_to(owner_id, reach.user_id):
            item["owner"] = reach.owner_name(owner_id)
            item["permission"] = permission_name(reach.note_level(owner_id, item["id"], item.get("project_id")))
    return items


async def summary_of(ctx: Context, note: Note) -> NoteSummary:
    """A note's summary as the caller sees it: with its owner and the caller's permission when
    it is someone else's."""
    summary = {**NoteSummary.model_validate(note).model_dump(), "owner_id": note.user_id,
               "assignee": await assignee_name(ctx, note.assignee_id)}
    reach = None if belongs_to(note.user_id, ctx.user_id) else await reach_of(ctx.session, ctx.caller)
    return NoteSummary.model_validate(mark_shared([summary], reach)[0])


# --- tools ------------------------------------------------------------------------------------


_SORTS: dict[str, tuple[Any, bool]] = {
    "updated": (Note.updated_at, True),
    "created": (Note.created_at, True),
    "title": (Note.title_key, False),
    "due": (func.coalesce(Note.due_date, literal(date(9999, 12, 31))), False),
}


@tool(group="notes", title="List notes and tasks", scope="read", route=Route("GET", "/notes"))
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
    assignee: AssigneeFilter | None = None,
    sort: Literal["updated", "created", "title", "due"] = "updated",
    preview: bool = False,
    limit: Limit = 20,
    cursor: Cursor = None,
) -> NotePage:
    """List notes and tasks without bodies, a page at a time; the first page counts all matches.

    Args:
        text: Words in the title or body.
        assignee: Tasks by assignee (notes have none).
        sort: updated, created: newest first; due: soonest first.
        preview: Add each body's start.
    """
    scoped = await check_refs(ctx, project_id=project_id, project=project,
                               milestone_id=milestone_id, parent_id=parent_id)
    filters = {"tag": tag, "kind": kind, "status": status, "priority": priority, "project_id": scoped,
               "milestone_id": milestone_id, "parent_id": parent_id, "due_before": due_before,
               "due_after": due_after}
    assigned = await assignee_filter(ctx, assignee)
    reach = await reach_of(ctx.session, ctx.caller)
    params = {**filter_params(**filters), **reach.params()}
    if text:
        params["text"] = text
    if assigned is not None and assigned[1] is not None:
        params["assignee_id"] = assigned[1]
    position = decode_cursor(cursor, f"notes:{sort}")
    if position is not None:
        params["after_key"], params["after_id"] = _cursor_value(sort, position[0]), position[1]
    params["page"] = limit + 1
    shape = (frozenset(params), kind, sort, preview, assigned[0] if assigned is not None else None)
    statements = _LIST_STATEMENTS.get(shape)
    if statements is None:
        statements = _list_statements(reach, filters, params, sort, preview, assigned)
        if len(_LIST_STATEMENTS) < 1024:
            _LIST_STATEMENTS[shape] = statements
    # on the session's connection: rows only, without the ORM's result machinery
    connection = await ctx.session.connection()
    result = await connection.execute(statements[0], params)
    names = tuple(result.keys())
    rows = result.all()
    next_cursor, total = None, None
    if len(rows) > limit:
        last = rows[limit - 1]
        next_cursor = encode_cursor(f"notes:{sort}", [last.sort_key, last.id])
        if position is None:  # the first page of several: count (up to TOTAL_CAP) what matches
            total = (await connection.execute(statements[1], params)).scalar_one()
    elif position is None:
        total = len(rows)
    # one validation call for the page: pydantic loops over the items in Rust
    items = mark_shared([dict(zip(names, row, strict=True)) for row in rows[:limit]], reach)
    if preview:
        for item in items:
            item["preview"] = plain_text(item.pop("body_start"), PREVIEW_CHARS) or None
    return NotePage.model_validate({"items": items, "total": total, "next_cursor": next_cursor})


# list_notes' statements (the page, and the count of the first page) by the filters present, the
# kind and the sort: building a statement (and its cache key) cost as much as running it, and a
# handful of shapes serve nearly every call.
_LIST_STATEMENTS: dict[tuple[frozenset[str], str, str, bool, str | None], tuple[Any, Any]] = {}
PREVIEW_CHARS = 140  # of a body's plain text a listed note's preview shows
PREVIEW_SOURCE = parsed_chars(PREVIEW_CHARS)  # of its markdown read for it (markup and front matter dropped)
TOTAL_CAP = 1000  # a total is exact up to here: counting 100,000 matches costs more than the page


def _list_statements(reach: Reach, filters: dict[str, Any], params: dict[str, Any], sort: str,
                     preview: bool, assigned: tuple[AssigneeMode, int | None] | None) -> tuple[Any, Any]:
    """The page and the count. The notes of others shared with the caller come from their own
    ordered index ranges (:func:`~fable_core.tools.access.reach_parts`), merged by the same order."""
    columns = (*SUMMARY_COLUMNS, func.left(Note.body, PREVIEW_SOURCE).label("body_start")) if preview \
        else SUMMARY_COLUMNS
    where = note_filters(**filters)
    if assigned is not None:
        where.append(assignee_clause(*assigned))
    if "text" in params:
        where.append(Note.search_vector.op("@@")(
            once(func.websearch_to_tsquery("english", bindparam("text", params["text"])))))
    counted = reach_parts(reach, lambda scope: select(literal(1).label("one")).where(scope, *where).limit(TOTAL_CAP))
    matching = (counted[0] if len(counted) == 1 else select(union_all(*counted).subquery()).limit(TOTAL_CAP)).subquery()
    count = select(func.count()).select_from(matching)
    key, descending = _SORTS[sort]
    if "after_key" in params:
        after = func.row(bindparam("after_key", params["after_key"], type_=key.type),
                         bindparam("after_id", params["after_id"]))
        where.append(func.row(key, Note.id) < after if descending else func.row(key, Note.id) > after)
    order = (key.desc(), Note.id.desc()) if descending else (key.asc(), Note.id.asc())
    limit: Any = bindparam("page", params["page"])

    if reach.alone:
        return select(*columns, key.label("sort_key")).where(readable(Note, reach), *where) \
            .order_by(*order).limit(limit), count
    # ids and keys from each part's index, the page of them, then the page's rows: the rows
    # of every shared project's first page are never read whole
    parts = reach_parts(reach, lambda scope: select(Note.id, key.label("sort_key")).where(scope, *where)
                        .order_by(*order).limit(limit))
    merged = union_all(*parts).subquery()
    by = (merged.c.sort_key.desc(), merged.c.id.desc()) if descending else (merged.c.sort_key, merged.c.id)
    top = select(merged).order_by(*by).limit(limit).subquery()
    final = (top.c.sort_key.desc(), top.c.id.desc()) if descending else (top.c.sort_key, top.c.id)
    return select(*columns, top.c.sort_key).join(top, top.c.id == Note.id).order_by(*final), count


def _cursor_value(sort: str, raw: Any) -> Any:
    try:
        if sort in ("updated", "created"):
            return datetime.fromisoformat(raw)
        if sort == "due":
            return date.fromisoformat(raw)
        return str(raw)
    except (TypeError, ValueError) as e:
        raise InvalidInput("cursor is not valid for this listing", field="cursor") from e
