"""Lists: items added, checked, unchecked and removed by position or text, each change a
version; concurrent additions all kept; bad references refused, changing nothing."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from mcp import Client
from support.structured import Api, Call

from fable_core.errors import InvalidInput, NotFound
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_mcp.server import build_server


async def test_a_list_is_created_changed_and_read(call: Call) -> None:
    made = await call("create_list", title="Shopping", items=["Milk", " eggs ", "Bread"], tags=["home"])
    assert made == {"id": made["id"], "title": "Shopping", "version": 1, "open": 3, "items": [
        {"text": "Milk", "checked": False}, {"text": "eggs", "checked": False}, {"text": "Bread", "checked": False}]}
    changed = await call("update_list", note_id=made["id"], check=[1, "EGGS"], remove=["bread"], add=["Apples"])
    assert changed["items"] == [{"text": "Milk", "checked": True}, {"text": "eggs", "checked": True},
                                {"text": "Apples", "checked": False}]
    assert changed["open"] == 1 and changed["version"] == 2
    unchecked = await call("update_list", note_id=made["id"], uncheck=["milk"])
    assert unchecked["open"] == 2 and unchecked["version"] == 3
    same = await call("update_list", note_id=made["id"], uncheck=["milk"])  # no change, no version
    assert same["version"] == 3
    assert await call("get_list", note_id=made["id"]) == unchecked
    note = await call("read_note", note_id=made["id"])
    assert note["kind"] == "list" and note["fields"]["items"][2] == {"text": "Apples", "checked": False}
    assert [h["id"] for h in (await call("search_notes", query="apples"))["items"]] == [made["id"]]
    restored = await call("restore_note_version", note_id=made["id"], version=1)
    assert restored["version"] == 4
    assert [i["text"] for i in (await call("get_list", note_id=made["id"]))["items"]] == ["Milk", "eggs", "Bread"]


async def test_concurrent_additions_are_all_kept(call: Call) -> None:
    made = await call("create_list", title="Packing")
    await asyncio.gather(*(call("update_list", note_id=made["id"], add=[f"item {n}"]) for n in range(8)))
    final = await call("get_list", note_id=made["id"])
    assert sorted(i["text"] for i in final["items"]) == sorted(f"item {n}" for n in range(8))
    assert final["version"] == 9


async def test_bad_references_change_nothing(call: Call, bob: Caller) -> None:
    made = await call("create_list", title="Todo", items=["a", "b"])
    note = await call("create_note", title="Plain")
    for arguments in ({"check": [3]}, {"check": [0]}, {"remove": ["c"]}, {"check": [1], "remove": ["zzz"]},
                      {"add": [""]}, {"add": ["x" * 501]}):
        with pytest.raises(InvalidInput):
            await call("update_list", note_id=made["id"], **arguments)
    with pytest.raises(InvalidInput, match="not a list"):
        await call("update_list", note_id=note["id"], add=["x"])
    with pytest.raises(InvalidInput, match="not a list"):
        await call("get_list", note_id=note["id"])
    with pytest.raises(NotFound):
        await call("update_list", note_id=made["id"], add=["x"], as_=bob)
    with pytest.raises(InvalidInput):
        await call("create_list", title="Huge", items=["x"] * 501)
    after = await call("get_list", note_id=made["id"])
    assert after["version"] == 1 and [i["checked"] for i in after["items"]] == [False, False]


async def test_rest_and_mcp(api: Api, fable: Fable, alice: Caller, call: Call) -> None:
    async with api(alice) as http:
        made = (await http.post("/lists", json={"title": "Books", "items": ["Dune"]})).json()
        checked = await http.patch(f"/lists/{made['id']}", json={"check": ["dune"]})
        assert checked.status_code == 200 and checked.json()["open"] == 0
        bad = await http.patch(f"/lists/{made['id']}", json={"check": [{"x": 1}]})
        assert bad.status_code == 422 and bad.json()["error"]["type"] == "invalid_input"
        assert (await http.get(f"/lists/{made['id']}")).json()["items"] == [{"text": "Dune", "checked": True}]
    async with Client(build_server(fable, replace(alice, surface="mcp"))) as client:
        refused = await client.call_tool("update_list", {"note_id": made["id"], "remove": [5]})
        assert refused.is_error and "no item 5" in refused.content[0].text  # type: ignore[union-attr]
    assert (await call("get_list", note_id=made["id"]))["version"] == 2
