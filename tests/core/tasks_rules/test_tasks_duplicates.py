"""The near-duplicate title rule is the notes': numbers, days and months tell titles apart, a
similar title asks for confirmation on every surface, the same title stays refused. Tasks may
repeat a title ("call mom" every week: issue 38, item 3)."""

from __future__ import annotations

import httpx
import pytest
from mcp import Client
from sqlalchemy import func, select

from fable_core.db.models import Note
from fable_core.errors import Conflict, NeedsConfirmation
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_mcp.server import build_server


async def _count(fable: Fable) -> int:
    async with fable.db.reading() as session:
        return int(await session.scalar(select(func.count()).select_from(Note)) or 0)


@pytest.mark.parametrize(("first", "second"), [
    ("Call Anna monday", "Call Anna tuesday"),
    ("Pay rent June", "Pay rent July"),
    ("Water plants today", "Water plants tomorrow"),
    ("Invoice 2026-11", "Invoice 2026-12"),
    ("Team lunch Dec 3", "Team lunch Dec 4"),
    ("Q3 report draft", "Q4 report draft"),
])
async def test_titles_differing_in_a_day_month_or_number_are_not_duplicates(call, first, second) -> None:
    await call("create_note", title=first)
    await call("create_note", title=second)


async def test_a_task_may_repeat_a_title_and_share_a_notes(call, fable: Fable) -> None:
    await call("create_note", title="Groceries", body="what we usually buy")
    task = await call("create_note", title="Groceries", status="todo")
    again = await call("create_note", title="groceries", priority="high")
    similar = await call("create_note", title="Grocerys", due_date="2026-12-24")
    assert [t["kind"] for t in (task, again, similar)] == ["task"] * 3
    renamed = await call("update_note", note_id=similar["id"], title="Groceries")
    assert renamed["title"] == "Groceries"
    await call("complete_task", note_id=task["id"])
    await call("delete_note", note_id=again["id"])
    assert (await call("restore_note", trashed_id=again["id"]))["title"] == "groceries"
    with pytest.raises(Conflict):  # a note keeps the rule, among notes
        await call("create_note", title="GROCERIES!")
    assert await _count(fable) == 4


async def test_a_similar_note_asks_for_confirmation_and_confirm_creates_it(call, fable: Fable) -> None:
    first = await call("create_note", title="Renew passport")
    before = await _count(fable)
    with pytest.raises(NeedsConfirmation) as asked:
        await call("create_note", title="Renew pasport")
    assert asked.value.details["match"] == {"id": first["id"], "title": "Renew passport"}
    assert await _count(fable) == before
    made = await call("create_note", title="Renew pasport", confirm=True)
    assert made["title"] == "Renew pasport" and await _count(fable) == before + 1


async def test_rest_asks_the_same_way_and_speaks_plainly(rest: httpx.AsyncClient, fable: Fable) -> None:
    first = (await rest.post("/notes", json={"title": "Book dentist"})).json()
    before = await _count(fable)
    r = await rest.post("/notes", json={"title": "Book dentst"})
    error = r.json()["error"]
    assert r.status_code == 409 and error["type"] == "needs_confirmation"
    assert error["details"]["match"] == {"id": first["id"], "title": "Book dentist"}
    assert "confirm" not in error["message"] and "confirm=true" in error["details"]["hint"]
    r = await rest.post("/notes", json={"title": "book dentist"})
    error = r.json()["error"]
    assert (r.status_code, error["type"]) == (409, "conflict") and await _count(fable) == before
    assert "update_note" not in error["message"] and "note_id" not in error["message"]
    assert error["message"] == f"note {first['id']} 'Book dentist' already has the same title"
    r = await rest.post("/notes", json={"title": "Book dentst", "confirm": True})
    assert r.status_code == 200, r.text
    r = await rest.post("/notes", json={"title": "Book dentist", "status": "todo"})
    assert r.status_code == 200, "a task of that title is not a duplicate"


async def test_mcp_gets_needs_confirmation_with_the_match(fable: Fable, alice: Caller, call) -> None:
    first = await call("create_note", title="Clean the garage")
    async with Client(build_server(fable, alice)) as mcp:
        result = await mcp.call_tool("create_note", {"title": "Clean the garrage"})
        text = result.content[0].text  # type: ignore[union-attr]
        assert result.is_error and "needs_confirmation" in text and str(first["id"]) in text
        assert "confirm=true" in text  # agents keep the hint
        result = await mcp.call_tool("create_note", {"title": "Clean the garrage", "confirm": True})
        assert not result.is_error
