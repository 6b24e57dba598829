"""Edit drafts: one per person and note (and one for the note not created yet), private to their
writer whoever owns the note, gone when the writer saves the note or the note goes; and the
merge of an edit with the note's changes made since it started, on every surface."""

from __future__ import annotations

from dataclasses import replace

import pytest
from mcp import Client
from support.drafts import Call, Rest

from fable_core.errors import Forbidden, InvalidInput, NotFound
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_mcp.server import build_server


async def test_a_draft_per_note_and_one_for_the_new_note_replaced_by_each_save(call: Call) -> None:
    note = await call("create_note", title="Trip", body="Rome")
    await call("save_draft", note_id=note["id"], title="Trip", body="Rome, then Naples", base_version=1)
    saved = await call("save_draft", note_id=note["id"], title="Trip", body="Rome, Naples", tags=["travel"],
                       base_version=1)
    for n in range(7):  # past the sixth run PostgreSQL plans the statement generically: still the same row
        await call("save_draft", title="", body=f"half a thought {n}")
    await call("save_draft", title="", body="half a thought")

    assert set(saved) == {"note_id", "updated_at"}
    draft = (await call("get_draft", note_id=note["id"]))["draft"]
    assert {k: draft[k] for k in ("title", "body", "tags", "base_version")} == {
        "title": "Trip", "body": "Rome, Naples", "tags": ["travel"], "base_version": 1}
    new = (await call("get_draft"))["draft"]
    assert new["body"] == "half a thought" and "note_id" not in new and "base_version" not in new

    assert (await call("discard_draft"))["discarded"] is True
    assert (await call("discard_draft"))["discarded"] is False
    assert await call("get_draft") == {}, "none is no error: the editor asks at every opening"
    assert (await call("get_draft", note_id=note["id"]))["draft"]["body"] == "Rome, Naples"


async def test_saving_the_note_drops_the_savers_draft_only_and_deleting_it_drops_all(
        call: Call, alice: Caller, bob: Caller) -> None:
    note = await call("create_note", title="Shared plan", body="one")
    await call("share", note_id=note["id"], with_user="bob", permission="editor")
    await call("save_draft", note_id=note["id"], body="alice's edit", base_version=1)
    await call("save_draft", note_id=note["id"], body="bob's edit", base_version=1, as_=bob)

    assert (await call("get_draft", note_id=note["id"], as_=bob))["draft"]["body"] == "bob's edit"  # his own
    await call("update_note", note_id=note["id"], body="alice saved", expected_version=1)

    assert await call("get_draft", note_id=note["id"]) == {}
    assert (await call("get_draft", note_id=note["id"], as_=bob))["draft"]["body"] == "bob's edit"
    await call("delete_note", note_id=note["id"])
    assert (await call("discard_draft", as_=bob))["discarded"] is False
    with pytest.raises(NotFound):
        await call("get_draft", note_id=note["id"], as_=bob)


async def test_a_viewer_may_not_keep_a_draft_and_a_stranger_does_not_see_the_note(
        call: Call, fable: Fable, alice: Caller, bob: Caller) -> None:
    note = await call("create_note", title="Read only", body="one")
    with pytest.raises(NotFound):
        await call("save_draft", note_id=note["id"], body="x", as_=bob)
    await call("share", note_id=note["id"], with_user="bob", permission="viewer")
    with pytest.raises(Forbidden):
        await call("save_draft", note_id=note["id"], body="x", as_=bob)
    assert await call("get_draft", note_id=note["id"], as_=bob) == {}


async def test_bad_drafts_are_refused_with_nothing_stored_on_every_surface(
        call: Call, fable: Fable, alice: Caller, rest: Rest) -> None:
    note = await call("create_note", title="Trip", body="Rome")
    with pytest.raises(InvalidInput, match="at most 1000000 characters"):
        await call("save_draft", note_id=note["id"], body="x" * 1_000_001)
    with pytest.raises(InvalidInput):
        await call("save_draft", tags=["t"] * 101)
    async with rest(alice) as http:
        bad = await http.put("/drafts", json={"note_id": note["id"], "base_version": 0})
        assert bad.status_code == 422 and bad.json()["error"]["type"] == "invalid_input"
        assert (await http.get("/drafts", params={"note_id": "x"})).status_code == 422
        assert (await http.put("/drafts", json={"note_id": note["id"], "body": "Rome!"})).status_code == 200
        assert (await http.get("/drafts", params={"note_id": note["id"]})).json()["draft"]["body"] == "Rome!"
        assert (await http.delete("/drafts", params={"note_id": note["id"]})).json()["discarded"] is True
        none = await http.get("/drafts", params={"note_id": note["id"]})
        assert (none.status_code, none.json()) == (200, {})
    async with Client(build_server(fable, replace(alice, surface="mcp"))) as client:
        assert "save_draft" not in {t.name for t in (await client.list_tools()).tools}  # the editor's, not agents'
        refused = await client.call_tool("save_draft", {"note_id": note["id"], "title": "t" * 301})
        assert refused.is_error
    assert await call("get_draft", note_id=note["id"]) == {} and await call("get_draft") == {}


BASE = "Intro\n\n## Plan\nstep one\n\n## Budget\n100 EUR\n"


async def test_an_edit_of_another_section_merges_cleanly_and_saves_on_the_current_version(
        call: Call, alice: Caller, rest: Rest) -> None:
    note = await call("create_note", title="Trip", body=BASE, tags=["travel"])
    await call("update_note", note_id=note["id"], body=BASE.replace("step one", "step one, booked"),
               add_tags=["rome"])
    async with rest(alice) as http:
        merged = (await http.post(f"/notes/{note['id']}/merge", json={
            "base_version": 1, "title": "Trip", "tags": ["travel", "summer"],
            "body": BASE.replace("100 EUR", "120 EUR")})).json()
        assert merged == {"note_id": note["id"], "version": 2, "base_version": 1, "clean": True, "title": "Trip",
                          "body": BASE.replace("step one", "step one, booked").replace("100 EUR", "120 EUR"),
                          "tags": ["travel", "rome", "summer"], "conflicts": []}
        unknown = await http.post(f"/notes/{note['id']}/merge", json={"base_version": 9, "body": ""})
        assert unknown.status_code == 404 and "no version 9" in unknown.json()["error"]["message"]
    saved = await call("update_note", note_id=note["id"], body=merged["body"], tags=merged["tags"],
                       expected_version=merged["version"])
    assert saved["version"] == 3


async def test_both_sides_changing_one_section_or_the_title_are_conflicts(call: Call) -> None:
    note = await call("create_note", title="Trip", body=BASE)
    await call("update_note", note_id=note["id"], title="Rome trip", body=BASE.replace("100 EUR", "90 EUR"))

    merged = await call("merge_note_edit", note_id=note["id"], base_version=1, title="Trip to Rome",
                        body=BASE.replace("100 EUR", "120 EUR"))

    assert merged["clean"] is False and merged["conflicts"] == ["Budget", "(the title)"]
    assert merged["title"] == "Trip to Rome"
    assert "<<<<<<< theirs\n90 EUR\n=======\n120 EUR\n>>>>>>> yours" in merged["body"]
