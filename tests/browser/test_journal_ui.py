"""The Journal page in a real Chromium against a real server whose model is the scripted fake
Ollama: today's conversation, "Prepare now" writing the morning note, writing in the day through
the chat view, the refusal to prepare a day already written in, and earlier days. A screenshot
goes to docs/screenshots/journal.png."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from playwright.async_api import expect
from support.browser import Session
from support.clock import today
from support.fake_llm import FakeLLM, Reply

pytestmark = pytest.mark.browser



async def test_the_journal_page_prepares_today_talks_and_shows_earlier_days(
        chat_ui: Session, chat_llm: FakeLLM) -> None:
    this_day = today()  # when the test runs, not when its module was imported
    yesterday = this_day - timedelta(days=1)
    page = chat_ui.page
    await chat_ui.register("ada")
    await chat_ui.api("POST", "/notes", {"title": "Call the plumber", "status": "todo",
                                         "due_date": this_day.isoformat()})
    await chat_ui.api("POST", "/journal/days", {"day": yesterday.isoformat()})
    await page.goto("/")
    await page.get_by_role("link", name="Journal").click()
    await expect(page).to_have_url(re.compile(r"/journal$"))
    await expect(page.get_by_role("heading", level=1)).to_have_text(
        f"Journal {this_day:%A} {this_day.day} {this_day:%B %Y}")
    await expect(page.locator("#thread .empty")).to_contain_text("No morning note yet")

    chat_llm.plain_replies.append(Reply("Good morning, Ada. The **plumber** needs a call today."))
    await page.get_by_role("button", name="Prepare now").click()
    opener = page.locator(".msg-assistant[data-rendered=true]").first
    await expect(opener.locator("strong")).to_have_text("plumber")
    await expect(page.get_by_role("button", name="Prepare again")).to_be_visible()
    await expect(page.locator("#journal-days li")).to_have_count(2)

    chat_llm.replies.append(Reply("A good plan: call before ten.", delay=0.02))
    await page.fill("#chat-input", "I'll call the plumber after breakfast.")
    await page.press("#chat-input", "Enter")
    await expect(page.locator(".msg-assistant").nth(1)).to_contain_text("call before ten.")
    system = chat_llm.chat_bodies()[-1]["messages"][0]["content"]
    assert f"ada's daily journal for {this_day:%A} {this_day.day} {this_day:%B %Y}" in system
    await chat_ui.shot("journal")

    await page.get_by_role("button", name="Prepare again").click()
    await expect(page.locator(".toast")).to_contain_text("already written in the journal")
    await expect(page.locator(".msg-assistant")).to_have_count(2)

    await page.locator(f'#journal-days li[data-day="{yesterday.isoformat()}"] a').click()
    await expect(page).to_have_url(re.compile(rf"/journal/{yesterday.isoformat()}$"))
    await expect(page.get_by_role("heading", level=1)).to_have_text(
        f"Journal {yesterday:%A} {yesterday.day} {yesterday:%B %Y}")
    await expect(page.locator("#thread .empty")).to_be_visible()
    assert not chat_ui.watch.errors
