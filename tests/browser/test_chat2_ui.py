"""The chat as a daily tool, in Chromium against the fake model: the thread follows a streaming
answer until the reader scrolls up (then "Jump to latest" brings them back), and an answer can
be regenerated, its message edited and resent, saved as a note; conversations are searched and
a conversation's model is picked."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from playwright.async_api import expect
from support.browser import Session
from support.fake_llm import FakeLLM, Reply
from support.pace import scaled

pytestmark = pytest.mark.browser

AT_BOTTOM = "t => t.scrollHeight - t.scrollTop - t.clientHeight < 48"


async def send(ui: Session, text: str) -> None:
    await ui.page.fill("#chat-input", text)
    await ui.page.press("#chat-input", "Enter")


async def test_the_thread_follows_the_answer_unless_the_reader_scrolls_up(chat_ui: Session, chat_llm: FakeLLM) -> None:
    page = chat_ui.page
    await chat_ui.register("ada")
    chat_llm.replies.append(Reply("\n\n".join(f"Line {i} of the tide table." for i in range(80)), delay=0.02))
    await page.goto("/chat")
    await send(chat_ui, "The tide table, please")
    thread = page.locator("#thread")
    await expect(thread.locator(".msg-assistant .msg-text")).to_contain_text("Line 30")
    assert await thread.evaluate("t => t.scrollHeight > t.clientHeight + 100")
    assert await thread.evaluate(AT_BOTTOM), "it follows the newest words"

    await thread.evaluate("t => { t.scrollTop = 0; }")
    await expect(page.locator("#chat-jump")).to_be_visible()
    await expect(thread.locator(".msg-assistant .msg-text")).to_contain_text("Line 60")
    assert await thread.evaluate("t => t.scrollTop") < 50, "the reader stays where they scrolled"

    await page.locator("#chat-jump").click()
    await expect(page.locator("#chat-jump")).to_be_hidden()
    assert await thread.evaluate(AT_BOTTOM)
    await expect(page.locator(".msg-assistant[data-rendered=true]")).to_contain_text("Line 79 of the tide table.")
    assert await eventually(lambda: thread.evaluate(AT_BOTTOM), True)
    assert not chat_ui.watch.errors


async def test_regenerate_edit_save_as_note_search_and_model(chat_ui: Session, chat_llm: FakeLLM) -> None:
    page = chat_ui.page
    await chat_ui.register("ada")
    chat_llm.models[:] = ["qwen3:8b", "tiny:1b", "fake-embed"]
    chat_llm.replies.extend([Reply("High tide at **six**."), Reply("High tide at **seven**."),
                             Reply("Low tide at **noon**.")])
    await page.goto("/chat")
    await send(chat_ui, "When is high tide?")
    answer = page.locator(".msg-assistant[data-rendered=true]")
    await expect(answer.locator("strong")).to_have_text("six")
    await expect(page).to_have_url(re.compile(r"/chat/\d+$"))
    conv_id = int(page.url.rsplit("/", 1)[1])

    await answer.get_by_role("button", name="Regenerate").click()
    await expect(page.locator(".msg-assistant[data-rendered=true] strong")).to_have_text("seven")
    await expect(page.locator(".msg-assistant")).to_have_count(1)

    await page.locator(".msg-user").get_by_role("button", name="Edit and resend").click()
    await page.get_by_label("Edit your message").fill("When is low tide?")
    await page.locator(".msg-edit-send").click()
    await expect(page.locator(".msg-assistant[data-rendered=true] strong")).to_have_text("noon")
    await expect(page.locator(".msg-user .msg-text")).to_have_text("When is low tide?")
    stored = await chat_ui.api("GET", f"/chat/conversations/{conv_id}")
    assert [(m["role"], m["content"]) for m in stored["messages"]] == [
        ("user", "When is low tide?"), ("assistant", "Low tide at **noon**.")]

    await page.locator(".msg-assistant").get_by_role("button", name="Save as note").click()
    await page.locator("#save-note-title").fill("Tides")
    await page.locator("#save-note-submit").click()
    await expect(page.locator(".toast")).to_contain_text("Saved “Tides”")
    [note] = [n for n in (await chat_ui.api("GET", "/notes"))["items"] if n["title"] == "Tides"]
    assert (await chat_ui.api("GET", f"/notes/{note['id']}"))["body"] == "Low tide at **noon**."

    await page.locator("#chat-model").select_option("tiny:1b")
    assert await eventually(lambda: _model(chat_ui, conv_id), "tiny:1b")

    await chat_ui.api("POST", "/chat/conversations", {"title": "Garden questions"})
    await page.locator("#conversation-search").fill("low tide")
    await expect(page.locator("#conversation-list .conv")).to_have_count(1)
    await expect(page.locator("#conversation-list")).not_to_contain_text("Garden questions")
    await page.locator("#conversation-search").fill("nothing like this")
    await expect(page.locator("#conversation-list")).to_contain_text("No conversation matches.")
    await chat_ui.shot("chat-actions")
    assert not chat_ui.watch.errors


async def eventually(read: Callable[[], Awaitable[Any]], wanted: Any) -> bool:
    """Whether ``read()`` gives ``wanted`` within five seconds."""
    for _ in range(round(scaled(5) / 0.05)):
        if await read() == wanted:
            return True
        await asyncio.sleep(0.05)
    return False


async def _model(ui: Session, conv_id: int) -> str | None:
    return (await ui.api("GET", f"/chat/conversations/{conv_id}")).get("model")
