"""Who may see and change which rows: the one module every tool goes through.

Today a row is visible only to its owner. Sharing (a later issue) extends these functions,
not their callers. A row the caller cannot see is reported as ``NotFound`` — never
``Forbidden``, which would leak that it exists.
"""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import Row, Select, bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.caller import Caller
from fable_core.errors import NotFound

__all__ = [
    "OWNER_PARAM",
    "ROW_PARAM",
    "fetch_visible",
    "get_visible",
    "owned_by",
    "owned_by_param",
    "visible",
    "visible_ids",
    "visible_row",
]

OWNER_PARAM = "owner_id"
ROW_PARAM = "row_id"

M = TypeVar("M")

_NAMES = {"notes": "note", "projects": "project", "milestones": "milestone", "task_logs": "work log"}


def visible(model: type[M], caller: Caller) -> Select[tuple[M]]:
    """``SELECT model`` restricted to rows the caller may read."""
    return select(model).where(model.user_id == caller.user_id)  # type: ignore[attr-defined]


def owned_by(model: Any, caller: Caller) -> Any:
    """The WHERE clause for rows the caller owns, for use in other statements."""
    return model.user_id == caller.user_id


def owned_by_param(model: Any, caller: Caller | None = None) -> Any:
    """:func:`owned_by` as a named bind parameter (:data:`OWNER_PARAM`), for statements built
    once and run for many callers: run them with ``{OWNER_PARAM: caller.user_id}`` (without a
    ``caller`` here, the parameter is required)."""
    owner = bindparam(OWNER_PARAM) if caller is None else bindparam(OWNER_PARAM, caller.user_id)
    return model.user_id == owner


def visible_row(model: Any, *columns: Any) -> Select[Any]:
    """``SELECT columns`` of the one row :data:`ROW_PARAM` of ``model``, if the caller
    (:data:`OWNER_PARAM`) may read it: a statement to build once and run with
    :func:`fetch_visible`, for hot reads where building it per call would cost more than running it."""
    return select(*columns).where(owned_by_param(model), model.id == bindparam(ROW_PARAM))


async def fetch_visible(session: AsyncSession, statement: Select[Any], model: Any, row_id: int,
                        caller: Caller) -> Row[Any]:
    """Run a :func:`visible_row` statement as a plain row (no ORM entity), or raise NotFound
    as :func:`get_visible` does."""
    params = {OWNER_PARAM: caller.user_id, ROW_PARAM: row_id}
    result = await (await session.connection()).execute(statement, params)
    row = result.first()
    if row is None:
        raise _not_found(model, row_id)
    return row


async def get_visible(
    session: AsyncSession, model: type[M], row_id: int, caller: Caller, *, for_update: bool = False
) -> M:
    """Load one row the caller may read, or raise NotFound naming what was asked for."""
    stmt = visible(model, caller).where(model.id == row_id)  # type: ignore[attr-defined]
    if for_update:
        stmt = stmt.with_for_update()
    row = (await session.execute(stmt)).scalar_one_or_none()
    if row is None:
        raise _not_found(model, row_id)
    return row


def _not_found(model: Any, row_id: int) -> NotFound:
    kind = _NAMES.get(model.__tablename__, model.__tablename__)
    return NotFound(f"{kind} {row_id} not found", **{f"{kind.replace(' ', '_')}_id": row_id})


async def visible_ids(session: AsyncSession, model: Any, ids: list[int], caller: Caller) -> set[int]:
    rows = await session.execute(select(model.id).where(model.id.in_(ids), owned_by(model, caller)))
    return set(rows.scalars())
