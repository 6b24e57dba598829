"""Fixtures for the knowledge tools: database snapshots (to prove nothing was written) and
expected-error helpers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy import text
from support.users import quick_user

from fable_core.errors import FableError
from fable_core.runtime import Fable

alice = quick_user("alice")
bob = quick_user("bob")


# Everything a knowledge tool may write; app_logs is left out because failures are logged there.
WRITABLE_TABLES = ("notes", "note_versions", "note_links", "note_words", "task_logs", "projects", "milestones",
                   "settings", "events", "event_tombstones")

Snapshot = Callable[[], Awaitable[dict[str, list[tuple[Any, ...]]]]]


@pytest.fixture
def snapshot(fable: Fable) -> Snapshot:
    """``await snapshot()``: every row of every writable table, to compare before and after."""

    async def take() -> dict[str, list[tuple[Any, ...]]]:
        async with fable.db.engine.connect() as conn:
            return {
                table: [tuple(r) for r in await conn.execute(text(f"SELECT * FROM {table} ORDER BY 1, 2"))]
                for table in WRITABLE_TABLES
            }

    return take


Fails = Callable[[Awaitable[Any], type[FableError]], Awaitable[FableError]]


@pytest.fixture
def fails() -> Fails:
    """``err = await fails(call(...), NotFound)``: the call must raise exactly that error type."""

    async def check(awaitable: Awaitable[Any], error: type[FableError]) -> FableError:
        with pytest.raises(FableError) as caught:
            await awaitable
        assert type(caught.value) is error, f"expected {error.__name__}, got {caught.value!r}"
        assert caught.value.message
        return caught.value

    return check


@pytest.fixture
def set_setting(fable: Fable) -> Callable[..., Awaitable[None]]:
    """``await set_setting(caller, "timezone", "Europe/Paris")``: a per-user setting row."""

    async def put(caller: Any, key: str, value: Any) -> None:
        import json

        async with fable.db.engine.begin() as conn:
            await conn.execute(
                text("INSERT INTO settings (user_id, key, value) VALUES (:u, :k, CAST(:v AS jsonb)) "
                     "ON CONFLICT (user_id, key) DO UPDATE SET value = excluded.value"),
                {"u": caller.user_id, "k": key, "v": json.dumps(value)},
            )

    return put
