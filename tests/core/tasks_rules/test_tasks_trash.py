"""The trash: delete_note moves a note there, restore_note brings it back with its id, versions
and links, empty_trash and the purge job delete for good; only the owner sees their trash."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from fable_core.errors import Conflict, NotFound
from fable_core.knowledge.trash.deleted_notes import purge
from fable_core.runtime import Fable


async def test_a_deleted_note_waits_in_the_trash_and_comes_back_whole(call, bob) -> None:
    note = await call("create_note", title="Recipe", body="flour")
    await call("update_note", note_id=note["id"], body="flour, water")
    await call("create_note", title="Menu", body="see [[Recipe]]")
    await call("delete_note", note_id=note["id"])
    with pytest.raises(NotFound):
        await call("read_note", note_id=note["id"])
    trash = await call("list_trash")
    assert trash["count"] == 1 and trash["items"][0]["id"] == note["id"] and trash["items"][0]["kind"] == "note"
    assert (await call("list_trash", as_=bob))["count"] == 0
    with pytest.raises(NotFound):
        await call("restore_note", trashed_id=note["id"], as_=bob)
    back = await call("restore_note", trashed_id=note["id"])
    assert back["id"] == note["id"] and back["version"] == 2
    assert [v["version"] for v in (await call("list_note_versions", note_id=note["id"]))["items"]] == [2, 1]
    links = await call("get_backlinks", note_id=note["id"])
    assert [b["title"] for b in links["items"]] == ["Menu"]
    assert (await call("list_trash"))["count"] == 0


async def test_a_restore_refuses_a_note_title_taken_meanwhile_not_a_task_s(call) -> None:
    note = await call("create_note", title="Plumbing")
    await call("delete_note", note_id=note["id"])
    await call("create_note", title="Plumbing")
    with pytest.raises(Conflict):
        await call("restore_note", trashed_id=note["id"])
    task = await call("create_note", title="Call plumber", status="todo")
    await call("delete_note", note_id=task["id"])
    await call("create_note", title="Call plumber", status="todo")
    assert (await call("restore_note", trashed_id=task["id"]))["title"] == "Call plumber"


async def test_empty_trash_and_the_purge_delete_for_good(call, fable: Fable) -> None:
    ids = [(await call("create_note", title=f"Old {i}"))["id"] for i in range(3)]
    for note_id in ids:
        await call("delete_note", note_id=note_id)
    assert (await call("empty_trash", trashed_id=ids[0]))["deleted"] == 1
    assert await purge(fable.db, 30) == 0
    assert await purge(fable.db, 30, now=datetime.now(UTC) + timedelta(days=31), batch=1) == 2
    assert (await call("list_trash"))["count"] == 0


async def test_rest_lists_restores_and_refuses_junk(rest: httpx.AsyncClient, call) -> None:
    note = await call("create_note", title="Draft letter")
    assert (await rest.delete(f"/notes/{note['id']}")).status_code == 200
    listed = (await rest.get("/trash")).json()
    assert listed["items"][0]["title"] == "Draft letter" and "purge_at" in listed["items"][0]
    assert (await rest.post(f"/trash/{note['id']}/restore")).status_code == 200
    assert (await rest.post(f"/trash/{note['id']}/restore")).status_code == 404
    assert (await rest.get("/trash", params={"cursor": "junk"})).status_code == 422
    assert (await rest.delete("/trash", params={"trashed_id": "x"})).status_code == 422
