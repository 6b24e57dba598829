"""Keyset paging newest first (:class:`fable_core.tools.paging.NewestFirst`), the one cursor
every newest-first listing uses: rows that share a timestamp are each listed exactly once, a
row written between pages neither repeats nor hides another, and a cursor that is not this
listing's is refused with the field named."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import delete, insert, select

from fable_core.db.models import AppLog
from fable_core.errors import InvalidInput
from fable_core.runtime import Fable
from fable_core.tools.paging import NewestFirst, encode_cursor

PAGES = NewestFirst("test-logs", AppLog.id, AppLog.created_at)
BY_ID = NewestFirst("test-ids", AppLog.id)
SAME = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


async def _write(fable: Fable, *actions: str, at: datetime = SAME) -> None:
    async with fable.db.transaction() as session:
        await session.execute(insert(AppLog), [{"category": "paging", "action": a, "created_at": at} for a in actions])


async def _all(fable: Fable, pages: NewestFirst, limit: int, between: Any = None) -> list[list[str]]:
    seen: list[list[str]] = []
    cursor = None
    while True:
        async with fable.db.reading() as session:
            rows = list(await session.scalars(pages.query(select(AppLog).where(AppLog.category == "paging"),
                                                          cursor, limit)))
        kept, cursor = pages.page(rows, limit)
        seen.append([r.action for r in kept])
        if between is not None and len(seen) == 1:
            await between()
        if cursor is None:
            return seen


@pytest.fixture(autouse=True)
async def _clean(fable: Fable) -> Any:
    yield
    async with fable.db.transaction() as session:
        await session.execute(delete(AppLog).where(AppLog.category == "paging"))


async def test_rows_sharing_a_timestamp_are_each_listed_once_newest_id_first(fable: Fable) -> None:
    await _write(fable, *(f"a{n}" for n in range(7)))
    await _write(fable, "older", at=datetime(2025, 1, 1, tzinfo=UTC))
    assert await _all(fable, PAGES, 3) == [["a6", "a5", "a4"], ["a3", "a2", "a1"], ["a0", "older"]]
    assert await _all(fable, BY_ID, 4) == [["older", "a6", "a5", "a4"], ["a3", "a2", "a1", "a0"]]


async def test_a_row_written_between_pages_neither_repeats_nor_hides_one(fable: Fable) -> None:
    await _write(fable, "a0", "a1", "a2", "a3")
    pages = await _all(fable, PAGES, 2, between=lambda: _write(fable, "new", at=datetime.now(UTC)))
    assert pages == [["a3", "a2"], ["a1", "a0"]]


async def test_the_last_page_exactly_full_has_no_cursor(fable: Fable) -> None:
    await _write(fable, "a0", "a1")
    assert await _all(fable, PAGES, 2) == [["a1", "a0"]]


@pytest.mark.parametrize("cursor", [
    encode_cursor("test-ids", [5]),  # another listing's
    encode_cursor("test-logs", ["yesterday", 5]),
    encode_cursor("test-logs", [SAME.isoformat()]),
    encode_cursor("test-logs", [SAME.isoformat(), "5"]),
    encode_cursor("test-logs", [SAME.isoformat(), True]),
    encode_cursor("test-logs", [SAME.isoformat(), 2**31]),
    encode_cursor("test-logs", [None, 0]),
    "not a cursor",
])
def test_a_cursor_that_is_not_this_listings_is_refused_naming_the_field(cursor: str) -> None:
    with pytest.raises(InvalidInput, match="cursor is not valid for this listing") as refused:
        PAGES.query(select(AppLog), cursor, 10)
    assert refused.value.details.get("field") == "cursor"
