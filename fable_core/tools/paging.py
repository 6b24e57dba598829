"""Opaque cursors for keyset pagination: every list tool pages, none floods a context."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Annotated, Any, TypeVar

from pydantic import Field
from sqlalchemy import ColumnElement, Select, tuple_
from sqlalchemy.orm import QueryableAttribute

from fable_core.errors import InvalidInput

__all__ = ["MAX_CURSOR", "Cursor", "Limit", "NewestFirst", "decode_cursor", "decode_offset", "encode_cursor"]

MAX_CURSOR = 2048
"""Characters a cursor may have. The longest of ours holds a 300-character title key: up to
1,200 bytes of UTF-8, 1,600 characters of base64. Anything longer is refused undecoded."""


def encode_cursor(kind: str, position: list[Any]) -> str:
    # ensure_ascii=False: a title outside ASCII costs its UTF-8 bytes, not six per character
    raw = json.dumps({"k": kind, "p": position}, separators=(",", ":"), default=str, ensure_ascii=False)
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None, kind: str) -> list[Any] | None:
    """The position stored in ``cursor``; InvalidInput if it is not one of ours for ``kind``."""
    if cursor is None:
        return None
    try:
        return _position(cursor, kind)
    except (ValueError, KeyError, TypeError, RecursionError) as e:  # RecursionError: JSON nested too deep
        raise InvalidInput(
            "cursor is not valid for this listing; pass next_cursor from the same call unchanged",
            field="cursor",
        ) from e


def decode_offset(cursor: str | None, kind: str) -> int:
    """The offset an offset-paged listing's ``cursor`` holds (``[offset]``; 0 without one);
    InvalidInput for anything else."""
    position = decode_cursor(cursor, kind)
    if not position:
        return 0
    if type(position[0]) is not int or position[0] < 0:
        raise InvalidInput("cursor is not valid for this listing; pass next_cursor from the same call unchanged",
                           field="cursor")
    return position[0]


def _position(cursor: str, kind: str) -> list[Any]:
    if len(cursor) > MAX_CURSOR:
        raise ValueError(f"longer than {MAX_CURSOR} characters")
    data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    if data["k"] != kind or not isinstance(data["p"], list):
        raise ValueError(kind)
    return data["p"]


Cursor = Annotated[str | None, Field(max_length=MAX_CURSOR)]
"""A list tool's ``cursor`` argument: the ``next_cursor`` of the page before, unchanged."""
Limit = Annotated[int, Field(ge=1, le=200)]
"""A list tool's ``limit`` argument, when it pages up to 200 at a time."""

R = TypeVar("R")
S = TypeVar("S", bound=Select[*tuple[Any, ...]])


class NewestFirst:
    """Keyset paging newest first: rows ordered by ``at`` then ``id``, both descending (or by
    ``id`` alone), each page starting after the last row of the one before, so a row written
    meanwhile neither repeats nor hides one. One for every listing of that shape::

        PAGES = NewestFirst("trash", TrashedNote.id, TrashedNote.deleted_at)
        rows = (await session.execute(PAGES.query(select(...).where(...), cursor, limit))).all()
        items, next_cursor = PAGES.page(rows, limit)
    """

    __slots__ = ("at", "id", "kind")

    def __init__(self, kind: str, ident: QueryableAttribute[int],
                 at: QueryableAttribute[datetime] | None = None) -> None:
        self.kind = kind  # the cursor's kind: a cursor of another listing is refused
        self.id: QueryableAttribute[int] = ident
        self.at: QueryableAttribute[datetime] | None = at

    def query(self, statement: S, cursor: str | None, limit: int) -> S:
        """``statement`` ordered newest first, after ``cursor``, one row more than ``limit``
        (which tells whether another page follows)."""
        position = decode_cursor(cursor, self.kind)
        if position is not None:
            statement = statement.where(self._after(position))
        order = [self.id.desc()] if self.at is None else [self.at.desc(), self.id.desc()]
        return statement.order_by(*order).limit(limit + 1)

    def page(self, rows: Sequence[R], limit: int, row: Callable[[R], Any] = lambda r: r) -> tuple[list[R], str | None]:
        """The first ``limit`` of ``rows`` (from :meth:`query`) and the next page's cursor, or
        None when these are the last. ``row`` finds the mapped object in a result row that
        holds more than it (``lambda r: r[0]``)."""
        kept = list(rows[:limit])
        if len(rows) <= limit or not kept:
            return kept, None
        last = row(kept[-1])
        ident = getattr(last, self.id.key)
        if self.at is None:
            return kept, encode_cursor(self.kind, [ident])
        return kept, encode_cursor(self.kind, [getattr(last, self.at.key).isoformat(), ident])

    def _after(self, position: list[Any]) -> ColumnElement[bool]:
        try:
            if self.at is None:
                (ident,) = position
                return self.id < _row_id(ident)
            at, ident = position
            return tuple_(self.at, self.id) < tuple_(datetime.fromisoformat(at), _row_id(ident))
        except (TypeError, ValueError) as e:
            raise InvalidInput("cursor is not valid for this listing; pass next_cursor from the same call unchanged",
                               field="cursor") from e


def _row_id(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**31:
        raise ValueError(f"not a row id: {value!r}")
    return value
