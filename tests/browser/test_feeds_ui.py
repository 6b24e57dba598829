"""The Feeds page in Chromium against a fake site over real HTTP: subscribe with a category, the
feed listed under it, read an item in place (its HTML never runs: the page shows text), save it
as a note, refresh, unsubscribe."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

import pytest
from playwright.async_api import expect
from support.browser import Session
from support.servers import serve, serve_in_thread
from support.web_site import FakeSite, web_site_app

from fable_core.runtime import Fable
from fable_web.app import create_app

pytestmark = pytest.mark.browser

FEED = """<?xml version="1.0"?><rss version="2.0"><channel><title>Daily News</title><link>https://news.example/</link>
<item><title>Rain expected</title><link>https://news.example/rain</link><guid>rain</guid>
<pubDate>Mon, 30 Nov 2026 08:00:00 GMT</pubDate>
<description>&lt;p&gt;Bring an &lt;b&gt;umbrella&lt;/b&gt;.&lt;/p&gt;&lt;script&gt;window.pwned = 1&lt;/script&gt;
&lt;img src="x" onerror="window.pwned = 2"&gt;</description></item>
<item><title>Markets calm</title><link>https://news.example/markets</link><guid>markets</guid>
<pubDate>Sun, 29 Nov 2026 08:00:00 GMT</pubDate><description>Stocks flat.</description></item>
</channel></rss>"""


async def test_subscribe_read_save_refresh_and_unsubscribe(
        fable: Fable, session_at: Callable[[str], AbstractAsyncContextManager[Session]]) -> None:
    site = FakeSite()
    site.put("/news.xml", FEED, "application/rss+xml", etag='"v1"')
    with serve_in_thread(web_site_app(site)) as site_url:
        local = Fable(fable.settings.model_copy(
            update={"fable_fetch_allow_hosts": [site_url.removeprefix("http://")]}), fable.db)
        async with serve(create_app(local)) as url, session_at(url) as ui:
            page = ui.page
            await ui.register("fay")
            await page.goto("/feeds")
            await expect(page.locator("#feed-list, #feed-side .empty")).to_contain_text("No feeds yet")
            await page.get_by_label("Feed address").fill(f"{site_url}/news.xml")
            await page.get_by_label("Category").fill("news")
            await page.get_by_role("button", name="Subscribe").click()
            await expect(page.locator("#feed-list")).to_contain_text("Daily News")
            await expect(page.locator(".feed-category")).to_have_text(["news"])
            items = page.locator(".feed-item")
            await expect(items.locator(".feed-title")).to_have_text(["Rain expected", "Markets calm"])

            await page.get_by_role("button", name="Rain expected").click()
            await expect(items.first.locator(".feed-text")).to_have_text("Bring an umbrella.")
            await expect(items.first).to_have_class("feed-item read")
            assert await page.evaluate("window.pwned") is None
            await items.first.get_by_role("button", name="Save as note").click()
            await expect(page.locator("#toasts")).to_contain_text("Saved as note “Rain expected”")
            await expect(items.first.get_by_role("link", name="Saved note")).to_be_visible()

            await page.get_by_role("button", name="Refresh").click()
            await expect(page.locator("#toasts")).to_contain_text("0 new items")
            assert site.hits("/news.xml")[-1]["if-none-match"] == '"v1"'
            await page.get_by_role("button", name="Markets calm").click()
            await ui.shot("feeds")

            await page.get_by_role("button", name="Unsubscribe from Daily News").click()
            await page.get_by_role("dialog").get_by_role("button", name="Unsubscribe").click()
            await expect(page.locator("#feed-side")).to_contain_text("No feeds yet")
            notes = await ui.api("GET", "/notes")
            assert [n["title"] for n in notes["items"]] == ["Rain expected"]
            assert ui.watch.errors == []
