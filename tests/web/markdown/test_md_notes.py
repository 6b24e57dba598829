"""Rendered notes over REST: embeds show only what the reader may read; previews and snippets
are plain text on every surface, and a bad ``preview`` changes nothing."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import httpx
import pytest
from mcp import Client
from support.web import error_of

from fable_core.errors import InvalidInput
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_mcp.server import build_server

Call = Any


async def _html(client: httpx.AsyncClient, note_id: int) -> str:
    r = await client.get(f"/api/notes/{note_id}/html")
    assert r.status_code == 200, r.text
    return str(r.json()["html"])


async def test_embeds_show_the_readers_notes_and_never_anothers(
        as_alice: httpx.AsyncClient, as_bob: httpx.AsyncClient) -> None:
    await as_bob.post("/api/notes", json={"title": "Diary", "body": "bob's secret words"})
    mine = (await as_alice.post("/api/notes", json={"title": "Recipe", "body": "## Dough\n\nflour *and* water\n\n"
                                                    "## Bake\n\nhot oven"})).json()
    page = (await as_alice.post("/api/notes", json={
        "title": "Week", "body": "![[Diary]]\n\n![[Recipe#Dough]]\n\n![[Week]]"})).json()
    html = await _html(as_alice, page["id"])
    assert "secret" not in html and 'href="/notes/new?title=Diary"' in html  # as if Diary did not exist
    assert "flour <em>and</em> water" in html and "hot oven" not in html
    assert f'href="/notes/{mine["id"]}#h-dough"' in html
    assert f'<span class="embed embed-cut"><a class="wikilink" href="/notes/{page["id"]}"' in html  # itself


async def test_a_note_shared_with_the_reader_is_embedded_and_unshared_it_is_gone(
        call: Call, bob: Caller, alice: Caller, as_alice: httpx.AsyncClient) -> None:
    diary = await call("create_note", title="Diary", body="bob's *shared* words", as_=bob)
    shared = await call("share", note_id=diary["id"], with_user=alice.username, as_=bob)
    page = (await as_alice.post("/api/notes", json={"title": "Week", "body": "![[Diary]]"})).json()
    assert "bob's <em>shared</em> words" in await _html(as_alice, page["id"])
    await call("unshare", share_id=shared["id"], as_=bob)
    assert "shared" not in await _html(as_alice, page["id"])


async def test_embed_cycles_between_notes_end(as_alice: httpx.AsyncClient) -> None:
    one = (await as_alice.post("/api/notes", json={"title": "One", "body": "one says ![[Two]]"})).json()
    await as_alice.post("/api/notes", json={"title": "Two", "body": "two says ![[One]]"})
    html = await _html(as_alice, one["id"])
    assert html.count("two says") == 1 and html.count("one says") == 1
    assert f'embed-cut"><a class="wikilink" href="/notes/{one["id"]}"' in html
    preview = (await as_alice.post("/api/render", json={"body": "![[One]]"})).json()["html"]
    assert preview.count("one says") == 1 and preview.count("two says") == 1  # then One again: a cycle


async def test_only_a_saved_notes_checkboxes_toggle(as_alice: httpx.AsyncClient) -> None:
    preview = (await as_alice.post("/api/render", json={"body": "- [ ] x"})).json()["html"]
    assert "disabled" in preview and "data-line" not in preview  # the editor's preview: nothing to save yet
    note = (await as_alice.post("/api/notes", json={"title": "Todo", "body": "- [ ] x"})).json()
    assert 'data-line="0"' in await _html(as_alice, note["id"])


async def test_previews_and_snippets_are_plain_text(call: Call) -> None:
    body = ("---\nstatus: draft\n---\n# Garden plan\n\nPlant **tomatoes** near [[Shed|the shed]] ==soon==.\n\n"
            "- [ ] buy [seeds](https://seeds.example/x)\n")
    garden = await call("create_note", title="Garden", body=body)
    shed = await call("create_note", title="Shed", body="")
    listed = (await call("list_notes", preview=True))["items"]
    assert {n["id"]: n.get("preview") for n in listed} == {
        garden["id"]: "Garden plan Plant tomatoes near the shed soon. buy seeds", shed["id"]: None}
    assert "preview" not in (await call("list_notes"))["items"][0]  # only when asked: agents pay per byte
    hit = (await call("search_notes", query="tomatoes"))["items"][0]
    assert hit["snippet"] == "Garden plan Plant **tomatoes** near the shed soon. buy seeds"
    back = (await call("get_backlinks", note_id=shed["id"]))["items"]
    assert [b["snippet"] for b in back] == ["Plant tomatoes near the shed soon."]


async def test_a_bad_preview_flag_is_refused_everywhere(
        fable: Fable, alice: Caller, call: Call, as_alice: httpx.AsyncClient) -> None:
    await call("create_note", title="Kept", body="x")
    with pytest.raises(InvalidInput, match="preview"):
        await call("list_notes", preview="maybe")
    refused = await as_alice.get("/api/notes", params={"preview": "maybe"})
    assert refused.status_code == 422 and error_of(refused)["type"] == "invalid_input"
    async with Client(build_server(fable, replace(alice, surface="mcp"))) as client:
        result = await client.call_tool("list_notes", {"preview": [1]})
        assert result.is_error and "preview" in result.content[0].text  # type: ignore[union-attr]
    ok = await as_alice.get("/api/notes", params={"preview": "true"})
    assert ok.json()["items"][0]["preview"] == "x"


async def test_heading_links_and_embeds_are_backlinks_that_follow_a_rename(call: Call) -> None:
    plan = await call("create_note", title="Plan", body="## Steps\n\none")
    source = await call("create_note", title="Log", body="see [[Plan#Steps|steps]] and ![[Plan]] or [[C#]]")
    assert [b["id"] for b in (await call("get_backlinks", note_id=plan["id"]))["items"]] == [source["id"]]
    await call("update_note", note_id=plan["id"], title="Roadmap", expected_version=1)
    moved = await call("read_note", note_id=source["id"])
    assert moved["body"] == "see [[Roadmap#Steps|steps]] and ![[Roadmap]] or [[C#]]"
