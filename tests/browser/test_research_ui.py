"""The Research page in a real Chromium against a Fable whose SearXNG, web and model are the
fakes (tests/support): ask a question, watch the run's progress arrive live, open the index
note it wrote, find the run among past research. A screenshot of the page goes to docs/screenshots."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager

import pytest
from playwright.async_api import expect
from support.browser import Session
from support.fables import ollama_at
from support.fake_llm import FakeLLM, Reply, ollama_app
from support.searxng import FakeSearxng, result, searxng_app
from support.servers import serve, serve_in_thread
from support.web_site import FakeSite, web_site_app

from fable_core.config import Settings
from fable_core.outside.research.runner import generations, research_key
from fable_core.runtime import Fable
from fable_web.app import create_app

pytestmark = pytest.mark.browser

PAGE = ("<html><head><title>Wild yeast</title></head><body><nav>menu</nav><article><h1>Wild yeast</h1>"
        "<p>Wild yeast and lactic bacteria make the gas that lifts the dough.</p></article></body></html>")


@pytest.fixture(scope="session")
def research_world() -> Iterator[tuple[FakeSearxng, FakeSite, FakeLLM, dict[str, str]]]:
    searxng, site, llm = FakeSearxng(), FakeSite(), FakeLLM()
    with (serve_in_thread(searxng_app(searxng)) as searxng_url, serve_in_thread(web_site_app(site)) as site_url,
          serve_in_thread(ollama_app(llm)) as llm_url):
        yield searxng, site, llm, {"searxng": searxng_url, "site": site_url, "llm": llm_url}


@pytest.fixture(scope="session")
async def research_url(settings: Settings, research_world: tuple) -> AsyncIterator[str]:
    urls = research_world[3]
    fable = await Fable.open(settings.model_copy(update={
        "searxng_url": urls["searxng"], "fable_fetch_allow_hosts": [urls["site"].removeprefix("http://")],
        **ollama_at(urls["llm"])}), migrate=False)
    try:
        async with serve(create_app(fable)) as url:
            yield url
    finally:
        for user_id in range(1, 6):
            await generations(fable).wait(research_key(user_id))
        await fable.close()


async def test_a_question_is_researched_live_into_linked_notes(
        session_at: Callable[[str], AbstractAsyncContextManager[Session]], research_url: str,
        research_world: tuple) -> None:
    searxng, site, llm, urls = research_world
    searxng.reset()
    site.reset()
    llm.reset()
    site.page("/yeast", PAGE)
    searxng.default = [result(f"{urls['site']}/yeast", "Wild yeast", "about yeast")]
    llm.plain_replies.extend([
        Reply(json.dumps({"queries": ["sourdough yeast", "sourdough gas"]})),
        Reply(json.dumps({"sections": [{"title": "Yeast at work", "focus": "gas", "sources": [1]},
                                       {"title": "Bacteria", "focus": "acid", "sources": [1]}]}), delay=0.05),
        Reply("Yeast makes carbon dioxide [1].", delay=0.05), Reply("Bacteria make acid [1].", delay=0.05),
        Reply("Sourdough rises because wild yeast makes gas [1].")])
    async with session_at(research_url) as ui:
        page = ui.page
        await ui.register("rita")
        await page.goto("/")
        await page.get_by_role("link", name="Research").click()
        await expect(page.get_by_role("heading", level=1)).to_have_text("Research")
        await expect(page.locator("#research-runs")).to_contain_text("No research yet.")
        await page.fill("#research-question", "Why does sourdough rise?")
        await page.click("#research-start")
        log = page.locator("#research-log")
        await expect(log).to_contain_text("Searching the web for: sourdough yeast · sourdough gas")
        await expect(log).to_contain_text("Read Wild yeast")
        await expect(log).to_contain_text("Outline: Yeast at work · Bacteria")
        await expect(log).to_contain_text("Done: the notes are written.")
        await expect(page.locator("#research-stop")).to_be_hidden()
        run = page.locator("#research-runs li.research-run").first
        await expect(run).to_contain_text("Why does sourdough rise?")
        await expect(run.locator(".research-status")).to_have_text("Done")
        await ui.shot("research")
        await page.click("#research-open-index")
        await expect(page.locator("#main")).to_contain_text("Sourdough rises because wild yeast makes gas")
        await expect(page.locator("#main")).to_contain_text("Yeast at work")

        hold = threading.Event()  # the next run's outline waits: it is stopped meanwhile
        llm.plain_replies.extend([Reply(json.dumps({"queries": ["rye"]})), Reply("{}", hold=hold)])
        try:
            await page.get_by_role("navigation", name="Main").get_by_role("link", name="Research").click()
            await page.fill("#research-question", "Why is rye sticky?")
            await page.click("#research-start")
            await expect(log).to_contain_text("Read Wild yeast")
            await page.click("#research-stop")
            await expect(log).to_contain_text("Stopped: nothing was written.")
            await expect(page.locator("#research-runs li.research-run").first.locator(".research-status")).to_have_text(
                "Stopped")
        finally:
            hold.set()
        assert not ui.watch.errors and not ui.watch.dialogs


async def test_web_search_not_set_up_is_said_where_the_question_is(chat_ui: Session) -> None:
    """Issue 38, item 7: a Fable with a model but no SearXNG says so beside the question, naming
    SEARXNG_URL, in a notice that stays (it was a toast that vanished)."""
    page = chat_ui.page
    await chat_ui.register("rita")
    await page.goto("/research")
    await page.fill("#research-question", "Why does sourdough rise?")
    await page.click("#research-start")
    said = page.locator("#research-notice")
    await expect(said).to_contain_text("Not available right now.")
    await expect(said).to_contain_text("SEARXNG_URL")
    await expect(page.locator(".toast")).to_have_count(0)
    assert not chat_ui.watch.errors
