"""Refreshing feeds against a fake site over real HTTP: a conditional GET with the stored
validators (a 304 parses and stores nothing), new items added once (deduplicated by guid), each
feed pruned to its newest 100; a slow feed fails after its timeout while the others refresh,
its error recorded and its next attempt backed off; the scheduled job refreshes what is due."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update
from support.feed_samples import rss
from support.outside import Call
from support.web_site import FakeSite

from fable_core.db.models import Feed
from fable_core.runtime import Fable
from fable_core.tools.jobs import run_job


def items(first: int, last: int) -> list[tuple[str, str]]:
    return [(f"Story {n}", f"<p>Body of story {n}</p>") for n in range(first, last)]


async def test_a_conditional_get_sends_the_validators_and_a_304_stores_nothing(
        call: Call, site: FakeSite, site_url: str) -> None:
    site.put("/f.xml", rss("F", items(0, 2)), "application/rss+xml", etag='"v1"',
             last_modified="Sun, 01 Nov 2026 08:00:00 GMT")
    feed = await call("subscribe_feed", url=f"{site_url}/f.xml")
    refreshed = await call("refresh_feeds")
    assert refreshed == {"new_items": 0, "feeds": [{"id": feed["id"], "name": "F", "status": "unchanged"}]}
    asked = site.hits("/f.xml")[-1]
    assert (asked["if-none-match"], asked["if-modified-since"]) == ('"v1"', "Sun, 01 Nov 2026 08:00:00 GMT")

    site.put("/f.xml", rss("F", items(0, 3)), "application/rss+xml", etag='"v2"')
    refreshed = await call("refresh_feeds", feed_id=feed["id"])
    assert refreshed["feeds"][0] == {"id": feed["id"], "name": "F", "status": "updated", "new": 1}
    assert site.hits("/f.xml")[-1]["if-none-match"] == '"v1"'
    site.put("/f.xml", rss("F", items(0, 3)), "application/rss+xml")  # no validators: fetched whole
    assert (await call("refresh_feeds"))["new_items"] == 0  # each guid stored once
    assert site.hits("/f.xml")[-1]["if-none-match"] == '"v2"'
    assert [i["title"] for i in (await call("list_feed_items"))["items"]] == ["Story 2", "Story 1", "Story 0"]


async def test_each_feed_keeps_its_newest_100_items(call: Call, site: FakeSite, site_url: str) -> None:
    site.put("/big.xml", rss("Big", items(0, 150)), "application/rss+xml")
    feed = await call("subscribe_feed", url=f"{site_url}/big.xml")
    assert feed["items"] == 100
    site.put("/big.xml", rss("Big", items(120, 170), start=120), "application/rss+xml")
    assert (await call("refresh_feeds"))["new_items"] == 20
    listed = [i["title"] for page in await _pages(call, feed_id=feed["id"]) for i in page]
    assert listed == [f"Story {n}" for n in range(169, 69, -1)]


async def _pages(call: Call, **filters: object) -> list[list[dict[str, object]]]:
    pages, cursor = [], None
    while True:
        page = await call("list_feed_items", limit=40, **filters, **({"cursor": cursor} if cursor else {}))
        pages.append(page["items"])
        cursor = page.get("next_cursor")
        if cursor is None:
            return pages


async def test_a_slow_feed_times_out_while_the_others_refresh(
        call: Call, site: FakeSite, site_url: str, outside_fable: Fable, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("a", "b", "slow"):
        site.put(f"/{name}.xml", rss(name, items(0, 1)), "application/rss+xml")
        await call("subscribe_feed", url=f"{site_url}/{name}.xml")
    monkeypatch.setattr(outside_fable, "settings", outside_fable.settings.model_copy(
        update={"fable_feed_timeout": 0.5, "fable_feed_concurrency": 2}))
    site.put("/slow.xml", rss("slow", items(0, 2)), "application/rss+xml", delay=5.0)
    for name in ("a", "b"):
        site.put(f"/{name}.xml", rss(name, items(0, 2)), "application/rss+xml")
    started = time.monotonic()
    refreshed = await call("refresh_feeds")
    assert time.monotonic() - started < 1.5
    by_name = {f["name"]: f for f in refreshed["feeds"]}
    assert by_name["a"]["new"] == by_name["b"]["new"] == 1
    assert by_name["slow"]["status"] == "failed" and "took longer than 0.5 s" in by_name["slow"]["error"]
    slow = next(f for f in (await call("list_feeds"))["feeds"] if f["name"] == "slow")
    assert "took longer than 0.5 s" in slow["last_error"] and slow["items"] == 1
    wait = datetime.fromisoformat(slow["next_fetch_at"]) - datetime.now(UTC)
    assert timedelta(seconds=50) < wait <= timedelta(minutes=1)  # backing off: a minute after one failure


async def test_the_job_refreshes_the_feeds_that_are_due(
        call: Call, site: FakeSite, site_url: str, outside_fable: Fable) -> None:
    for name in ("due", "later"):
        site.put(f"/{name}.xml", rss(name, items(0, 1)), "application/rss+xml", etag=f'"{name}"')
        await call("subscribe_feed", url=f"{site_url}/{name}.xml")
    async with outside_fable.db.transaction() as session:
        await session.execute(update(Feed).where(Feed.name == "due").values(next_fetch_at=datetime.now(UTC)))
    site.put("/due.xml", rss("due", items(0, 2)), "application/rss+xml", etag='"due2"')
    site.requests.clear()
    assert await run_job(outside_fable, "refresh_due_feeds")
    assert [r["path"] for r in site.requests] == ["/due.xml"]
    assert [i["title"] for i in (await call("list_feed_items"))["items"]][:1] == ["Story 1"]
    async with outside_fable.db.reading() as session:
        due = await session.scalar(select(Feed).where(Feed.name == "due"))
    assert due is not None and due.etag == '"due2"' and due.failures == 0
    assert due.next_fetch_at > datetime.now(UTC) + timedelta(minutes=29)
