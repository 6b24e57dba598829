"""web_search against a fake SearXNG at the wire: compact results (no empty fields, each URL
once, as many as asked), the query SearXNG is asked, every surface; a slow, refusing or absent
SearXNG gives a clear error; bad input is refused before SearXNG is asked."""

from __future__ import annotations

import asyncio
import time

import pytest
from support.outside import TIMEOUT, Api, Call
from support.searxng import FakeSearxng, result

from fable_core.errors import InvalidInput, Unavailable
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.registry import REGISTRY

PAGES = [result("https://example.org/a", "Sourdough basics", "Flour, water,  salt\nand time."),
         result("https://example.org/b", "Starter care", "", engine="brave"),
         result("https://example.org/a", "Sourdough basics (again)", "from another engine", engine="brave"),
         result("javascript:alert(1)", "not a page"),
         result("https://example.org/c", "Hydration", "65 % to 80 %", publishedDate="2026-11-30T00:00:00")]


async def test_results_are_compact_each_url_once_and_as_many_as_asked(call: Call, searxng: FakeSearxng) -> None:
    searxng.answer("sourdough", PAGES)
    searxng.answer("sourdough", PAGES, category="news")
    found = await call("web_search", query="  sourdough ", limit=2)
    assert found == {"query": "sourdough", "page": 1, "results": [
        {"title": "Sourdough basics", "url": "https://example.org/a", "snippet": "Flour, water, salt and time.",
         "engine": "duckduckgo"},
        {"title": "Starter care", "url": "https://example.org/b", "engine": "brave"}]}
    asked = searxng.requests[-1]
    assert asked == {"q": "sourdough", "format": "json", "categories": "general", "pageno": "1"}

    every = await call("web_search", query="sourdough", page=2, time_range="week", category="news")
    assert [r["url"] for r in every["results"]] == ["https://example.org/a", "https://example.org/b",
                                                   "https://example.org/c"]
    assert every["results"][2]["published"] == "2026-11-30T00:00:00"
    assert searxng.requests[-1] == {"q": "sourdough", "format": "json", "categories": "news", "pageno": "2",
                                    "time_range": "week"}


async def test_rest_serves_it_and_refuses_bad_input_before_asking_searxng(
        api: Api, alice: Caller, searxng: FakeSearxng) -> None:
    searxng.answer("rye", PAGES[:1])
    async with api(alice) as http:
        ok = await http.get("/web/search", params={"query": "rye"})
        assert ok.status_code == 200 and ok.json()["results"][0]["title"] == "Sourdough basics"
        for params in ({"query": ""}, {"query": "rye", "page": "0"}, {"query": "rye", "limit": "21"},
                       {"query": "x" * 401}, {"query": "rye", "time_range": "decade"},
                       {"query": "rye", "category": "images"}):
            bad = await http.get("/web/search", params=params)
            assert bad.status_code == 422, params
            assert bad.json()["error"]["type"] == "invalid_input"
    assert len(searxng.requests) == 1


async def test_a_slow_searxng_fails_after_its_timeout_and_others_go_on(
        call: Call, searxng: FakeSearxng, bob: Caller) -> None:
    searxng.delay = 5.0
    started = time.monotonic()
    with pytest.raises(Unavailable, match=f"SearXNG did not answer within {TIMEOUT:g} s"):
        await call("web_search", query="slow")
    assert time.monotonic() - started < TIMEOUT + 1.5
    # while one search waits, another user's unrelated tool call is answered at once
    waiting = asyncio.ensure_future(call("web_search", query="slow"))
    started = time.monotonic()
    await call("list_notes", as_=bob)
    assert time.monotonic() - started < 0.5
    with pytest.raises(Unavailable):
        await waiting


@pytest.mark.parametrize(("status", "message"), [
    (403, "enable it with `search.formats: \\[html, json\\]`"), (502, "SearXNG answered HTTP 502")])
async def test_a_refusing_searxng_is_a_clear_error(call: Call, searxng: FakeSearxng, status: int,
                                                    message: str) -> None:
    searxng.status = status
    with pytest.raises(Unavailable, match=message):
        await call("web_search", query="anything")


async def test_without_searxng_the_tool_is_not_offered_and_says_why(fable: Fable, alice: Caller) -> None:
    assert fable.settings.searxng_url is None
    offered = [t.name for t in REGISTRY.for_agents(alice, fable.availability)]
    assert "web_search" not in offered and "list_notes" in offered
    with pytest.raises(Unavailable, match="web search is not set up on this Fable: its operator sets SEARXNG_URL"):
        await fable.call("web_search", {"query": "anything"}, alice)


async def test_with_searxng_it_is_offered(outside_fable: Fable, alice: Caller) -> None:
    assert "web_search" in [t.name for t in REGISTRY.for_agents(alice, outside_fable.availability)]


async def test_bad_input_is_refused_on_the_dispatcher(call: Call, searxng: FakeSearxng) -> None:
    with pytest.raises(InvalidInput):
        await call("web_search", query="   ")
    assert searxng.requests == []
