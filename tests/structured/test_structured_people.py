"""People and places: saved by name (created, then merged), their fields in the note's structure,
searched, linked, versioned and restored like any note; bad fields refused on every surface."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from mcp import Client
from support.structured import Api, Call

from fable_core.errors import Conflict, InvalidInput, NotFound
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_mcp.server import build_server


async def test_a_person_is_created_then_updated_by_name_merging_fields(call: Call) -> None:
    made = await call("save_person", person="Ada Lovelace", body="Met at the [[Analytical Club]].",
                      fields={"email": " ada@example.org ", "organisation": "Analytical Engines Ltd",
                              "birthday": "1815-12-10", "links": ["https://ada.example.org"]}, tags=["friends"])
    assert made == {"id": made["id"], "title": "Ada Lovelace", "kind": "person", "version": 1, "created": True,
                    "tags": ["friends"],
                    "fields": {"email": "ada@example.org", "organisation": "Analytical Engines Ltd",
                               "birthday": "1815-12-10", "links": ["https://ada.example.org/"]}}
    again = await call("save_person", person="ada  LOVELACE", fields={"phone": "+44 20 7946 0000", "email": None})
    assert again["id"] == made["id"] and again["created"] is False and again["version"] == 2
    assert again["fields"] == {"organisation": "Analytical Engines Ltd", "birthday": "1815-12-10",
                               "links": ["https://ada.example.org/"], "phone": "+44 20 7946 0000"}
    assert again["title"] == "ada  LOVELACE" and again["tags"] == ["friends"]  # tags kept when not given
    read = await call("read_note", note_id=made["id"])
    assert read["kind"] == "person" and read["fields"] == again["fields"]
    assert read["body"] == "Met at the [[Analytical Club]]."
    plain = await call("create_note", title="Groceries")
    assert "fields" not in await call("read_note", note_id=plain["id"])


async def test_fields_are_searched_and_kind_filters(call: Call) -> None:
    ada = await call("save_person", person="Ada", fields={"email": "ada@engines.org", "organisation": "Babbage Works"})
    cafe = await call("save_place", place="Corner Cafe", fields={"address": "12 Quayside Lane, Bristol",
                                                                 "lat": 51.45, "lon": -2.59, "category": "cafe"})
    await call("create_note", title="Bristol trip", body="Walk along the Quayside.")
    by_org = await call("search_notes", query="babbage")
    assert [h["id"] for h in by_org["items"]] == [ada["id"]] and by_org["items"][0]["kind"] == "person"
    assert [h["id"] for h in (await call("search_notes", query="ada@engines.org"))["items"]] == [ada["id"]]
    places = await call("search_notes", query="quayside", kind="place")
    assert [h["id"] for h in places["items"]] == [cafe["id"]]
    notes = await call("list_notes", kind="note")
    assert [n["title"] for n in notes["items"]] == ["Bristol trip"]
    listed = await call("list_entities", kind="place")
    assert listed == {"items": [{"id": cafe["id"], "title": "Corner Cafe", "kind": "place", "version": 1,
                                 "tags": [], "fields": {"address": "12 Quayside Lane, Bristol", "lat": 51.45,
                                                        "lon": -2.59, "category": "cafe"}}]}


async def test_list_entities_pages_by_name(call: Call) -> None:
    for name in ("Cleo", "ada", "Bea"):
        await call("save_person", person=name)
    first = await call("list_entities", kind="person", limit=2)
    assert [p["title"] for p in first["items"]] == ["ada", "Bea"]
    rest = await call("list_entities", kind="person", limit=2, cursor=first["next_cursor"])
    assert [p["title"] for p in rest["items"]] == ["Cleo"] and "next_cursor" not in rest


async def test_wikilinks_reach_a_person_and_versions_restore_fields(call: Call) -> None:
    note = await call("create_note", title="Lunch", body="With [[Grace Hopper]] on Friday.")
    grace = await call("save_person", person="Grace Hopper", fields={"role": "Rear admiral"})
    links = await call("get_backlinks", note_id=grace["id"])
    assert [b["id"] for b in links["items"]] == [note["id"]]
    await call("save_person", person="Grace Hopper", fields={"role": "Professor", "relation": "mentor"})
    versions = await call("list_note_versions", note_id=grace["id"])
    assert versions["items"][0]["changes"] == "fields changed"
    restored = await call("restore_note_version", note_id=grace["id"], version=1)
    assert restored["version"] == 3 and restored["kind"] == "person"
    assert (await call("read_note", note_id=grace["id"]))["fields"] == {"role": "Rear admiral"}


async def test_a_plain_note_becomes_a_person_but_a_task_or_a_place_does_not(call: Call) -> None:
    plain = await call("create_note", title="Linus", body="Kernel person.")
    made = await call("save_person", person="Linus", note_id=plain["id"], fields={"organisation": "Linux"})
    assert made["id"] == plain["id"] and made["kind"] == "person" and made["created"] is False
    task = await call("create_note", title="Call Linus", status="todo")
    place = await call("save_place", place="Helsinki")
    for target in (task["id"], place["id"]):
        with pytest.raises(InvalidInput, match="not a person"):
            await call("save_person", person="Linus", note_id=target)
    with pytest.raises(Conflict):  # a plain note already has the name: no second note of that title
        await call("create_note", title="Linus")
    with pytest.raises(Conflict):
        await call("save_place", place="Linus")
    for tool, arguments in (("convert_note", {"to": "task"}), ("update_note", {"status": "todo"}),
                            ("update_note", {"due_date": "2026-12-24"})):
        with pytest.raises(InvalidInput, match="cannot be a task"):
            await call(tool, note_id=made["id"], **arguments)


async def test_others_people_are_not_found_and_shared_ones_are_marked(call: Call, alice: Caller, bob: Caller) -> None:
    ada = await call("save_person", person="Ada", fields={"email": "ada@example.org"})
    with pytest.raises(NotFound):
        await call("save_person", person="Ada", note_id=ada["id"], as_=bob)
    bobs = await call("save_person", person="Ada", as_=bob)  # the same name among bob's own: his own person
    assert bobs["id"] != ada["id"] and bobs["created"] is True
    assert [p["id"] for p in (await call("list_entities", kind="person", as_=bob))["items"]] == [bobs["id"]]


BAD_FIELDS: list[tuple[str, dict[str, Any]]] = [
    ("save_person", {"person": "X", "fields": {"email": "not-an-email"}}),
    ("save_person", {"person": "X", "fields": {"phone": "call me"}}),
    ("save_person", {"person": "X", "fields": {"birthday": "1815-13-10"}}),
    ("save_person", {"person": "X", "fields": {"links": ["javascript:alert(1)"]}}),
    ("save_person", {"person": "X", "fields": {"shoe_size": 44}}),
    ("save_person", {"person": "X", "fields": {"role": "r" * 201}}),
    ("save_person", {"person": "", "fields": {}}),
    ("save_place", {"place": "X", "fields": {"lat": 91, "lon": 0}}),
    ("save_place", {"place": "X", "fields": {"lat": 50}}),
    ("save_place", {"place": "X", "fields": {"url": "ftp://x.org"}}),
]


async def test_bad_fields_are_refused_and_change_nothing(call: Call) -> None:
    for tool, arguments in BAD_FIELDS:
        with pytest.raises(InvalidInput):
            await call(tool, **arguments)
    assert (await call("list_notes"))["items"] == []


async def test_rest_and_mcp_refuse_bad_fields(api: Api, fable: Fable, alice: Caller, call: Call) -> None:
    async with api(alice) as http:
        ok = await http.post("/people", json={"person": "Ada", "fields": {"email": "ada@example.org"}})
        assert ok.status_code == 200 and ok.json()["fields"] == {"email": "ada@example.org"}
        bad = await http.post("/people", json={"person": "Ada", "fields": {"email": "nope"}})
        assert bad.status_code == 422 and bad.json()["error"]["type"] == "invalid_input"
        assert (await http.get("/entities", params={"kind": "person"})).json()["items"][0]["fields"] == {
            "email": "ada@example.org"}
        assert (await http.get("/entities", params={"kind": "people"})).status_code == 422
    async with Client(build_server(fable, replace(alice, surface="mcp"))) as client:
        refused = await client.call_tool("save_place", {"place": "Moon", "fields": {"lat": 100, "lon": 0}})
        assert refused.is_error
    assert [e["title"] for e in (await call("list_entities", kind="place"))["items"]] == []
