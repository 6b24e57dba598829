"""A search whose meaning could not be searched says so above its results (issue 40, item 3): the
embedding server is held busy past the interactive limit, and the Notes page shows why the
results are keyword matches only, then drops the notice once meaning is searched again."""

from __future__ import annotations

import threading

import pytest
from playwright.async_api import expect
from support.browser import Session
from support.fake_llm import FakeLLM

from fable_core.runtime import Fable

pytestmark = pytest.mark.browser


async def test_keyword_only_results_say_why(chat_ui: Session, chat_llm: FakeLLM, chat_fable: Fable) -> None:
    page = chat_ui.page
    await chat_ui.register("ada")
    await chat_ui.api("POST", "/notes", {"title": "Boiler service", "body": "annual boiler check"})
    embedder = chat_fable.assistant.embedder
    assert embedder is not None
    limit = embedder.query_timeout
    embedder.query_timeout, chat_llm.embed_hold = 0.3, threading.Event()
    try:
        await page.goto("/notes?q=boiler")
        notice = page.locator("#keyword-only")
        await expect(notice).to_contain_text("Matched by words only.")
        await expect(notice).to_contain_text("did not answer within 0.3 s")
        await expect(page.locator("#notes-list")).to_contain_text("Boiler service")  # the words still match
    finally:
        chat_llm.embed_hold.set()
        embedder.query_timeout = limit
        embedder._down_until = 0.0  # the back-off over
    await page.goto("/notes?q=annual")
    await expect(page.locator("#notes-list")).to_contain_text("Boiler service")
    await expect(page.locator("#keyword-only")).to_have_count(0)
