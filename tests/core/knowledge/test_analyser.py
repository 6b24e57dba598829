"""Bulk loads leave the note tables analysed; small calls never set off an analyse."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import text

from fable_core.config import Settings
from fable_core.knowledge.analyser import MIN_ROWS, TABLES
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


def _notes(count: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"title": f"Imported note {i:05d} {i * 7919 % 100003:x}", "body": f"Body of note {i}."}
            for i in range(start, start + count)]


async def _analysed_since(fable: Fable, began: datetime) -> dict[str, bool]:
    async with fable.db.engine.connect() as conn:
        rows = await conn.execute(text(
            "SELECT relname, coalesce(last_analyze > :began, false) FROM pg_stat_user_tables"
            " WHERE relname = ANY(:tables)"), {"began": began, "tables": list(TABLES)})
        return dict(rows.all())


async def _now(fable: Fable) -> datetime:
    async with fable.db.engine.connect() as conn:
        return (await conn.execute(text("SELECT clock_timestamp()"))).scalar_one()


async def test_a_bulk_import_leaves_the_note_tables_analysed(fable: Fable, settings: Settings,
                                                            alice: Caller) -> None:
    began = await _now(fable)
    loader = await Fable.open(settings, migrate=False)  # its own runtime, as `fable call` would be
    try:
        result = await loader.call("import_notes", {"notes": _notes(MIN_ROWS)}, alice)
        assert result["created"] == MIN_ROWS
    finally:
        await loader.close()  # the analyse runs in the background; closing finishes a due one
    assert await _analysed_since(fable, began) == dict.fromkeys(TABLES, True)
    async with fable.db.engine.connect() as conn:
        rows = (await conn.execute(text("SELECT reltuples FROM pg_class WHERE relname = 'notes'"))).scalar_one()
    assert rows == MIN_ROWS, "the planner knows every imported note"


async def test_small_calls_never_set_off_an_analyse(fable: Fable, settings: Settings, alice: Caller) -> None:
    began = await _now(fable)
    loader = await Fable.open(settings, migrate=False)
    try:
        await loader.call("import_notes", {"notes": _notes(MIN_ROWS - 2)}, alice)
        await loader.call("create_note", {"title": "One more by hand"}, alice)
    finally:
        await loader.close()
    assert await _analysed_since(fable, began) == dict.fromkeys(TABLES, False)
