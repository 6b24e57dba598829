"""Usage rows are written in batches after the call: none lost at close, none blocking the rest."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import delete, select
from sqlalchemy.exc import DBAPIError

from fable_core.caller import Caller
from fable_core.db.models import AppLog, User
from fable_core.runtime import Fable
from fable_core.tools.usage import ATTEMPTS, UsageLog


async def _logs(fable: Fable) -> list[AppLog]:
    async with fable.db.transaction() as s:
        return list(await s.scalars(select(AppLog).order_by(AppLog.id)))


def _row(action: str, user_id: int | None, **extra: Any) -> dict[str, Any]:
    return {"created_at": datetime.now(UTC), "category": "usage", "user_id": user_id,
            "username": "alice", "action": action, "surface": "mcp", "duration_ms": 1.0,
            "error_type": None, "error_message": None, "traceback": None, **extra}


async def test_a_call_is_logged_on_flush_with_its_own_time(fable: Fable, alice: Caller) -> None:
    before = datetime.now(UTC)
    await fable.call("list_notes", {}, alice)
    assert await _logs(fable) == []  # not on the call's path
    await fable.dispatcher.usage.flush()
    [row] = await _logs(fable)
    assert (row.action, row.user_id, row.surface) == ("list_notes", alice.user_id, "internal")
    assert before <= row.created_at <= datetime.now(UTC)


async def test_close_writes_what_is_queued(fable: Fable, alice: Caller) -> None:
    other = await Fable.open(fable.settings, migrate=False)
    await other.call("list_tags", {}, alice)
    await other.close()  # long before the periodic flush
    assert [r.action for r in await _logs(fable)] == ["list_tags"]


async def test_a_user_deleted_before_the_flush_keeps_the_row_under_the_username(
    fable: Fable, alice: Caller
) -> None:
    usage = UsageLog(fable.db)
    usage.record(_row("read_note", alice.user_id))
    async with fable.db.transaction() as s:
        await s.execute(delete(User).where(User.id == alice.user_id))
    await usage.close()
    [row] = await _logs(fable)
    assert (row.action, row.user_id, row.username) == ("read_note", None, "alice")


async def test_a_batch_the_database_refuses_is_dropped_after_retries_and_the_next_is_written(
    fable: Fable, alice: Caller
) -> None:
    usage = UsageLog(fable.db)
    usage.record(_row("x" * 500, alice.user_id))  # longer than the column: always refused
    for _ in range(ATTEMPTS):
        with pytest.raises(DBAPIError):
            await usage.flush()
    usage.record(_row("read_note", alice.user_id))
    await usage.close()
    assert [r.action for r in await _logs(fable)] == ["read_note"]
