"""Feed items: searched by words and, with an embedding model (the fake Ollama's), by meaning,
as citeable results; listed by feed, category and unread, marked read; saved as a note with a
source link, once however often it is saved."""

from __future__ import annotations

import pytest
from support.feed_samples import atom, rss
from support.outside import Call
from support.web_site import FakeSite

from fable_core.errors import NotFound
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

WEATHER = rss("Weather desk", [
    ("Storm warning for the coast", "<p>Gale force winds and heavy rain along the coast tonight.</p>"),
    ("Umbrella sales soar", "<p>Shops report the umbrella forecast is bright.</p>"),
    ("Local bakery opens", "<p>Fresh sourdough every morning.</p>")])


@pytest.fixture
async def weather(call: Call, site: FakeSite, site_url: str, outside_fable: Fable) -> dict[str, object]:
    site.put("/weather.xml", WEATHER, "application/rss+xml")
    feed = await call("subscribe_feed", url=f"{site_url}/weather.xml", category="news")
    assert outside_fable.assistant is not None and outside_fable.assistant.worker is not None
    await outside_fable.assistant.worker.idle(backfill=False)  # the items' embeddings are written
    return feed


async def test_search_by_words_and_by_meaning_gives_citeable_results(
        call: Call, weather: dict[str, object], fable: Fable, alice: Caller) -> None:
    found = await call("search_feed_items", query="storm coast")
    assert found["mode"] == "hybrid"
    top = found["items"][0]
    assert (top["title"], top["link"], top["feed"]) == (
        "Storm warning for the coast", "https://news.example/0", "Weather desk")
    assert "**coast**" in top["snippet"] and top["published"].startswith("2026-11-01T08:00:00")
    # no item has every word, so words alone find nothing; by meaning the umbrella item is near
    meaning = await call("search_feed_items", query="umbrella forecast tomorrow")
    assert [i["title"] for i in meaning["items"]][:1] == ["Umbrella sales soar"]
    assert all(i["title"] != "Local bakery opens" for i in meaning["items"])
    # without an embedding model: words only, and it says so
    words = await fable.call("search_feed_items", {"query": "sourdough"}, alice)
    assert words["mode"] == "keyword" and [i["title"] for i in words["items"]] == ["Local bakery opens"]
    assert (await fable.call("search_feed_items", {"query": "umbrella forecast tomorrow"}, alice))["items"] == []


async def test_filters_and_marking_read(call: Call, weather: dict[str, object], site: FakeSite,
                                        site_url: str, bob: Caller) -> None:
    site.put("/blog.atom", atom("Blog", [("Musings", "on storms")]), "application/atom+xml")
    blog = await call("subscribe_feed", url=f"{site_url}/blog.atom")
    assert [i["title"] for i in (await call("list_feed_items", category="news"))["items"]] == [
        "Local bakery opens", "Umbrella sales soar", "Storm warning for the coast"]
    assert [i["title"] for i in (await call("search_feed_items", query="storm", feed_id=blog["id"]))["items"]] == [
        "Musings"]
    ids = [i["id"] for i in (await call("list_feed_items", feed_id=weather["id"]))["items"]]
    assert await call("mark_feed_items_read", item_ids=ids[:2]) == {"changed": 2}
    assert await call("mark_feed_items_read", item_ids=ids[:2]) == {"changed": 0}
    assert await call("mark_feed_items_read", item_ids=ids, as_=bob) == {"changed": 0}  # not his
    unread = (await call("list_feed_items", unread=True))["items"]
    assert [i["title"] for i in unread] == ["Musings", "Storm warning for the coast"]
    assert await call("mark_feed_items_read", feed_id=blog["id"]) == {"changed": 1}
    assert await call("mark_feed_items_read", item_ids=ids[:1], read=False) == {"changed": 1}
    feeds = {f["name"]: f["unread"] for f in (await call("list_feeds"))["feeds"]}
    assert feeds == {"Blog": 0, "Weather desk": 2}
    assert (await call("search_feed_items", query="storm", as_=bob))["items"] == []


async def test_saving_an_item_makes_one_note_with_its_source(call: Call, weather: dict[str, object],
                                                              bob: Caller) -> None:
    [storm] = [i for i in (await call("list_feed_items"))["items"] if i["title"].startswith("Storm")]
    saved = await call("save_feed_item", item_id=storm["id"])
    assert saved["created"] and saved["title"] == "Storm warning for the coast"
    note = await call("read_note", note_id=saved["note_id"])
    assert note["body"].startswith("Gale force winds and heavy rain along the coast tonight.")
    assert "Source: [https://news.example/0](https://news.example/0) — Weather desk, 2026-11-01" in note["body"]
    assert note["tags"] == ["feed"]
    again = await call("save_feed_item", item_id=storm["id"])
    assert again == {**saved, "created": False}
    listed = (await call("list_feed_items"))["items"]
    assert next(i for i in listed if i["id"] == storm["id"])["note_id"] == saved["note_id"]
    # an item titled like a note the user has: saved beside it, under a longer title
    await call("create_note", title="Umbrella sales soar", body="my own")
    [umbrella] = [i for i in listed if i["title"].startswith("Umbrella")]
    other = await call("save_feed_item", item_id=umbrella["id"])
    assert other["title"] == "Umbrella sales soar — Weather desk"
    assert len((await call("list_notes"))["items"]) == 3
    with pytest.raises(NotFound, match=f"feed item {storm['id']} not found"):
        await call("save_feed_item", item_id=storm["id"], as_=bob)
