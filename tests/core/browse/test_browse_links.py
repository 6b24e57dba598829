"""suggest_links: the notes a body names without a link (titles and aliases, in the order the body
names them), then close notes by shared words when no embedding model is there; never the note
itself, one it links already, one the caller cannot read; bad input refused."""

from __future__ import annotations

import pytest

from fable_core.errors import InvalidInput, NotFound
from fable_core.knowledge.browse.links import mention_keys
from fable_core.tools.caller import Caller


async def test_unlinked_mentions_come_first_in_the_order_the_body_names_them(call) -> None:
    garden = await call("create_note", title="Garden Plan", body="beds and compost")
    tomato = await call("create_note", title="Tomato", body="---\naliases: [Love apple]\n---\nred")
    linked = await call("create_note", title="Seeds", body="what to sow")
    await call("create_note", title="Unrelated", body="nothing here")
    note = await call("create_note", title="Spring", body=(
        "Plant a love-apple or two, as the GARDEN plan says. Buy [[Seeds]] first.\n"
        "`Unrelated` code is no mention, nor is [the garden plan](https://example.com/garden-plan)."))
    found = await call("suggest_links", note_id=note["id"])
    assert found["mode"] == "keyword"
    mentions = [(s["id"], s["mention"]) for s in found["items"] if s["reason"] == "mention"]
    assert mentions == [(tomato["id"], "love apple"), (garden["id"], "garden plan")]
    assert linked["id"] not in {s["id"] for s in found["items"]}
    assert note["id"] not in {s["id"] for s in found["items"]}
    assert found["items"][1] == {"id": garden["id"], "title": "Garden Plan", "kind": "note", "reason": "mention",
                                 "mention": "garden plan"}


async def test_close_notes_share_words_and_pages_never_repeat(call) -> None:
    made = [await call("create_note", title=f"Compost heap {n}", body="compost worms compost layers")
            for n in range(5)]
    note = await call("create_note", title="Soil", body="Layers of compost feed the worms.")
    first = await call("suggest_links", note_id=note["id"], limit=3)
    assert [s["reason"] for s in first["items"]] == ["close"] * 3 and first["next_cursor"]
    second = await call("suggest_links", note_id=note["id"], limit=3, cursor=first["next_cursor"])
    ids = [s["id"] for s in first["items"] + second["items"]]
    assert sorted(ids) == sorted(n["id"] for n in made) and second["next_cursor"] is None


async def test_only_notes_the_caller_may_read(call, bob: Caller) -> None:
    await call("create_note", title="Secret plan", as_=bob)
    note = await call("create_note", title="Mine", body="The secret plan is on.")
    assert (await call("suggest_links", note_id=note["id"]))["items"] == []
    with pytest.raises(NotFound):
        await call("suggest_links", note_id=note["id"], as_=bob)


@pytest.mark.parametrize("args", [{}, {"note_id": 0}, {"note_id": "x"}, {"note_id": 1, "limit": 0},
                                  {"note_id": 1, "limit": 51}, {"note_id": 1, "cursor": "nonsense"}])
async def test_bad_input_is_refused(call, args) -> None:
    note = await call("create_note", title="Any", body="words")
    with pytest.raises(InvalidInput):
        await call("suggest_links", **{**args, **({"note_id": note["id"]} if args.get("note_id") == 1 else {})})
    with pytest.raises(NotFound):
        await call("suggest_links", note_id=note["id"] + 1000)


async def test_rest_serves_it(call, api, alice: Caller) -> None:
    await call("create_note", title="Garden plan")
    note = await call("create_note", title="Notes", body="see the garden plan")
    async with api(alice) as http:
        ok = await http.get(f"/notes/{note['id']}/link-suggestions")
        assert ok.status_code == 200 and ok.json()["items"][0]["title"] == "Garden plan"
        bad = await http.get(f"/notes/{note['id']}/link-suggestions", params={"limit": "x"})
        assert bad.status_code == 422 and bad.json()["error"]["type"] == "invalid_input"


def test_mention_keys_are_runs_of_words_outside_code_and_links() -> None:
    keys = mention_keys("A big Red-Fox ran. `code words` [[Linked note]] https://x.org/fox-den\nden")
    assert keys["big red fox"] == 1 and keys["red fox ran"] == 2 and "den" in keys
    assert not {"code", "linked", "linked note", "org", "ran den", "a"} & keys.keys()
