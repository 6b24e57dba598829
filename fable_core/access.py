"""Who may see and change which rows: the one module that decides it.

Today a row is visible only to its owner. Sharing (a later issue) extends these functions, not
their callers: every predicate on a row's owner lives here (a test fails on a ``user_id``
compared anywhere else), and each caller says which question it asks:

- **visible**: may the caller read it (listings, loads, retrieval): :func:`visible`,
  :func:`get_visible`, :func:`visible_row`, :func:`visible_ids`, :func:`owned_by_param` for
  statements built once;
- **owned by**: is it the caller's own (their drafts, their settings, their conversations):
  :func:`owned_by`;
- **of user**: the rows of one account, by id (API keys, sessions, tokens, for account code that
  has a user id and no caller): :func:`of_user`;
- **same owner**: rows of whoever owns a given row (a note's links resolve among its owner's
  notes): :func:`same_owner`;
- in Python, for rows already in memory (a live answer's buffer, a subscription):
  :func:`belongs_to`; and in hand-written SQL: :func:`owner_sql`.

A row the caller cannot see is reported as ``NotFound``: never ``Forbidden``, which would leak
that it exists.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, TypeVar

from sqlalchemy import BindParameter, Row, Select, bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped

from fable_core.caller import Caller
from fable_core.errors import NotFound

__all__ = [
    "OWNER_PARAM",
    "ROW_PARAM",
    "belongs_to",
    "fetch_visible",
    "get_visible",
    "notified",
    "of_user",
    "owned_by",
    "owned_by_param",
    "owner_sql",
    "same_owner",
    "visible",
    "visible_ids",
    "visible_row",
]

OWNER_PARAM = "owner_id"
ROW_PARAM = "row_id"



class Owned(Protocol):
    """A model whose rows have an id and an owner: Note, Project, Milestone, Conversation, ...
    (class attributes: the columns :func:`visible` and :func:`get_visible` filter on)."""

    id: ClassVar[Mapped[int]]
    user_id: ClassVar[Mapped[int]]


M = TypeVar("M", bound=Owned)

_NAMES = {"notes": "note", "projects": "project", "milestones": "milestone", "task_logs": "work log"}


def visible(model: type[M], caller: Caller) -> Select[M]:
    """``SELECT model`` restricted to rows the caller may read."""
    return select(model).where(model.user_id == caller.user_id)


def owned_by(model: Any, caller: Caller) -> Any:
    """The WHERE clause for rows the caller owns, for use in other statements."""
    return model.user_id == caller.user_id


def of_user(model: Any, user_id: Any) -> Any:
    """The WHERE clause for the rows of one account (``user_id`` a value or a column)."""
    return model.user_id == user_id


def same_owner(model: Any, row: Any) -> Any:
    """The WHERE clause for rows of ``row``'s owner (``row`` an entity with a ``user_id``)."""
    return model.user_id == row.user_id


def belongs_to(owner_id: int | None, user_id: int) -> bool:
    """Whether something held in memory (a live answer's buffer, a cached session) whose owner
    is ``owner_id`` is user ``user_id``'s."""
    return owner_id is not None and owner_id == user_id


def notified(user_id: int, owner_id: int) -> bool:
    """Whether a change to a row owned by ``owner_id`` concerns ``user_id`` (who hears of it)."""
    return user_id == owner_id


def owner_sql(alias: str, param: str) -> str:
    """The owner predicate in hand-written SQL: ``alias.user_id = :param``."""
    return f"{alias}.user_id = :{param}"


def owned_by_param(model: Any, caller: Caller | None = None) -> Any:
    """:func:`owned_by` as a named bind parameter (:data:`OWNER_PARAM`), for statements built
    once and run for many callers: run them with ``{OWNER_PARAM: caller.user_id}`` (without a
    ``caller`` here, the parameter is required)."""
    owner: BindParameter[int] = bindparam(OWNER_PARAM) if caller is None else bindparam(OWNER_PARAM, caller.user_id)
    return model.user_id == owner


def visible_row(model: Any, *columns: Any) -> Select[*tuple[Any, ...]]:
    """``SELECT columns`` of the one row :data:`ROW_PARAM` of ``model``, if the caller
    (:data:`OWNER_PARAM`) may read it: a statement to build once and run with
    :func:`fetch_visible`, for hot reads where building it per call would cost more than running it."""
    return select(*columns).where(owned_by_param(model), model.id == bindparam(ROW_PARAM))


async def fetch_visible(session: AsyncSession, statement: Select[*tuple[Any, ...]], model: Any, row_id: int,
                        caller: Caller) -> Row[*tuple[Any, ...]]:
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
    stmt = visible(model, caller).where(model.id == row_id)
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
