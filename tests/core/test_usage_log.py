"""Usage rows are written in batches after the call: none lost at close, none blocking the rest."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import delete, select

from fable_core.db.models import AppLog, User
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.usage import ATTEMPTS, UsageLog


async def _logs(fable: Fable) -> list[AppLog]:
    async with fable.db.transaction() as s:
        # not the request log's: a served app's rows may land a moment after its test ended
        return list(await s.scalars(select(AppLog).where(AppLog.category != "request").order_by(AppLog.id)))


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


async def test_rows_are_made_storable_when_recorded(fable: Fable, alice: Caller) -> None:
    usage = UsageLog(fable.db)
    usage.record(_row("x" * 500, alice.user_id, error_message="bad \x00 byte", error_type="e\x00"))
    await usage.close()
    [row] = await _logs(fable)
    assert row.action == "x" * 100 and row.error_message == "bad \ufffd byte" and row.error_type == "e\ufffd"


async def test_a_row_the_database_refuses_costs_only_itself(fable: Fable, alice: Caller, bob: Caller) -> None:
    usage = UsageLog(fable.db)
    usage.record(_row("list_notes", alice.user_id))
    usage.record(_row("broken", bob.user_id, category=None))  # NOT NULL: refused however it is cut
    usage.record(_row("read_note", bob.user_id))
    await usage.flush()
    await usage.close()
    assert [r.action for r in await _logs(fable)] == ["list_notes", "read_note"]


async def test_a_nul_byte_in_one_users_arguments_loses_nobodys_usage(fable: Fable, alice: Caller,
                                                                    bob: Caller) -> None:
    """A tool call whose arguments carry a NUL byte fails with a message quoting them; its
    failure row and everyone else's rows in the same batch are all written."""
    from fable_core.errors import InvalidInput

    await fable.call("list_notes", {}, alice)
    with pytest.raises(InvalidInput):
        await fable.call("list_tags", {"x\x00y": 1}, bob)
    await fable.call("list_tags", {}, alice)
    await fable.dispatcher.usage.flush()
    rows = await _logs(fable)
    assert [(r.action, r.user_id) for r in rows] == [
        ("list_notes", alice.user_id), ("list_tags", bob.user_id), ("list_tags", alice.user_id)]
    assert rows[1].error_type == "invalid_input" and "\x00" not in (rows[1].error_message or "")


async def test_rows_wait_while_the_database_is_down_and_are_dropped_after_retries(fable: Fable) -> None:
    from sqlalchemy.ext.asyncio import create_async_engine

    from fable_core.db.database import Database

    gone = Database(create_async_engine("postgresql+asyncpg://fable@127.0.0.1:9/fable"), "gone")
    usage = UsageLog(gone)
    usage.record(_row("read_note", None))
    try:
        for attempt in range(ATTEMPTS):
            with pytest.raises(OSError):  # noqa: PT011  whichever refusal the platform gives
                await usage.flush()
            assert usage.pending == (1 if attempt < ATTEMPTS - 1 else 0)
    finally:
        await gone.close()
