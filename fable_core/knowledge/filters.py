"""WHERE clauses the knowledge listings and searches share, so that a tag, a project or "tasks
only" means the same everywhere; every value a named bind parameter, so statements built once
run again with new values."""

from __future__ import annotations

from datetime import date
from typing import Any

from sqlalchemy import ColumnElement, Text, any_, bindparam, exists, func, or_, select
from sqlalchemy.dialects.postgresql import ARRAY

from fable_core.db.models import Milestone, Note
from fable_core.knowledge.matching import project_ref
from fable_core.tools import Context
from fable_core.tools.access import get_visible

__all__ = ["check_refs", "escape_like", "filter_params", "note_filters", "once", "tag_clause", "tag_params"]


def escape_like(value: str) -> str:
    """``value`` with LIKE's wildcards escaped (PostgreSQL's default escape is a backslash)."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def once(expression: Any) -> Any:
    """``expression`` computed once per statement (an InitPlan). Statements are prepared, and a
    generic plan evaluates an expression of parameters in a filter again for every row: parsing
    a search query for each of the 2,000 notes of a search window tripled its cost."""
    return select(expression).scalar_subquery()


def tag_params(tag: str) -> dict[str, Any]:
    """The bind parameters of :func:`tag_clause` for ``tag``."""
    return {"tag_exact": [tag], "tag_under": f"{escape_like(tag)}/%"}


def tag_clause(tag: str) -> ColumnElement[bool]:
    """Notes tagged ``tag`` or a tag under it: 'work' matches 'work' and 'work/acme', not 'workshop'.

    The values are named bind parameters (``tag_params``), so a statement built once can be
    run again for another tag."""
    values = tag_params(tag)
    tags = func.unnest(Note.tags).table_valued("v").render_derived(name="t")
    under = exists(select(1).select_from(tags).where(
        tags.c.v.like(bindparam("tag_under", values["tag_under"], type_=Text))))
    return or_(Note.tags.contains(bindparam("tag_exact", values["tag_exact"], type_=ARRAY(Text))), under)


async def check_refs(ctx: Context, *, project_id: int | None = None, project: str | None = None,
                      milestone_id: int | None = None, parent_id: int | None = None) -> int | None:
    """Refuse filters naming rows the caller cannot see (NotFound, as everywhere); returns the
    project id a project name resolved to."""
    chosen = await project_ref(ctx.session, ctx.caller, project_id, project)
    if milestone_id is not None:
        await get_visible(ctx.session, Milestone, milestone_id, ctx.caller)
    if parent_id is not None:
        await get_visible(ctx.session, Note, parent_id, ctx.caller)
    return chosen.id if chosen else None


def note_filters(
    *, tag: str | None, kind: str, status: list[str] | None,
    priority: list[str] | None, project_id: int | None, milestone_id: int | None,
    parent_id: int | None, due_before: date | None, due_after: date | None,
) -> list[ColumnElement[bool]]:
    """The listings' WHERE clauses, besides which notes the caller may read
    (:func:`fable_core.tools.access.readable`, :func:`~fable_core.tools.access.reach_parts`); every value is
    a named bind parameter, so that ``list_notes`` can build its statement once per combination
    of filters and run it again with new values (``filter_params`` gives them under the same names)."""
    where: list[ColumnElement[bool]] = []
    if tag is not None:
        where.append(tag_clause(tag))
    if kind == "note":
        where.extend((Note.status.is_(None), Note.entity.is_(None)))
    elif kind == "task":
        where.extend((Note.status.is_not(None), Note.entity.is_(None)))
    elif kind != "all":
        where.append(Note.entity == kind)  # one of three literals: the statement's shape has it
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


def filter_params(**filters: Any) -> dict[str, Any]:
    """The bind parameters of ``note_filters(**filters)``: the filters given (not None, not
    empty), under the names ``note_filters`` binds them to."""
    params: dict[str, Any] = {}
    for name, value in filters.items():
        if name == "tag":
            if value is not None:
                params.update(tag_params(value))
        elif name != "kind" and value is not None and value != []:
            params[name] = value
    return params
