"""suggest_titles: the same title first, then titles starting with what is typed (shortest
first), then titles with a word starting with it, then similar titles; only notes the caller
may read; bad input refused on every surface."""

from __future__ import annotations

from dataclasses import replace

import pytest
from mcp import Client

from fable_core.errors import InvalidInput
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_mcp.server import build_server


async def test_exact_then_prefix_then_word_then_similar_amid_many_titles(call, alice: Caller, bulk) -> None:
    await bulk(alice, "Meeting filler {n}", 300)
    await bulk(alice, "Filler about meetings {n}", 300)
    made = {t: await call("create_note", title=t) for t in (
        "Weekly meeting", "Meeting", "Meetings log", "Project kickoff meeting", "Meetng notes")}
    found = await call("suggest_titles", text="meeting", limit=5)
    assert [(m["title"], m["match"]) for m in found["items"]] == [
        ("Meeting", "exact"), ("Meetings log", "prefix"),
        ("Meeting filler 1", "prefix"), ("Meeting filler 2", "prefix"), ("Meeting filler 3", "prefix")]
    assert found["items"][0] == {"id": made["Meeting"]["id"], "title": "Meeting", "kind": "note", "match": "exact"}

    words = await call("suggest_titles", text="kickoff")
    assert [(m["title"], m["match"]) for m in words["items"]] == [("Project kickoff meeting", "word")]
    typo = await call("suggest_titles", text="meetng")
    assert typo["items"][0] == {"id": made["Meetng notes"]["id"], "title": "Meetng notes", "kind": "note",
                                "match": "prefix"}
    fuzzy = await call("suggest_titles", text="wekly meetin")
    assert fuzzy["items"][0]["title"] == "Weekly meeting" and fuzzy["items"][0]["match"] == "similar"


async def test_punctuation_and_case_do_not_matter_and_tasks_are_found(call) -> None:
    task = await call("create_note", title="Call: the Bank!", status="todo")
    found = await call("suggest_titles", text="  CALL THE bank ")
    assert found["items"] == [{"id": task["id"], "title": "Call: the Bank!", "kind": "task", "match": "exact"}]
    assert (await call("suggest_titles", text="?!"))["items"] == []
    assert (await call("suggest_titles", text="100%_"))["items"] == []


async def test_only_titles_the_caller_may_read(call, bob: Caller) -> None:
    await call("create_note", title="Secret plan", as_=bob)
    assert (await call("suggest_titles", text="secret plan"))["items"] == []


@pytest.mark.parametrize("args", [{"text": ""}, {"text": "   "}, {"text": "x" * 301}, {"text": "a", "limit": 0},
                                  {"text": "a", "limit": 51}, {}])
async def test_bad_input_is_refused(call, args) -> None:
    with pytest.raises(InvalidInput):
        await call("suggest_titles", **args)


async def test_rest_and_mcp_serve_it(call, api, fable: Fable, alice: Caller) -> None:
    await call("create_note", title="Garden plan")
    async with api(alice) as http:
        ok = await http.get("/titles", params={"text": "gard"})
        assert ok.status_code == 200 and ok.json()["items"][0]["title"] == "Garden plan"
        bad = await http.get("/titles", params={"text": "gard", "limit": "x"})
        assert bad.status_code == 422 and bad.json()["error"]["type"] == "invalid_input"
    async with Client(build_server(fable, replace(alice, surface="mcp"))) as client:
        result = await client.call_tool("suggest_titles", {"text": "garden"})
        assert not result.is_error and '"match":"prefix"' in result.content[0].text
        refused = await client.call_tool("suggest_titles", {"text": ""})
        assert refused.is_error and refused.content[0].text.startswith("invalid_input")
