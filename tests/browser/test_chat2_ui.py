"""The chat as a daily tool, in Chromium against the fake model: the thread follows a streaming
answer until the reader scrolls up (then "Jump to latest" brings them back), and an answer can
be regenerated, its message edited and resent, saved as a note; conversations are searched and
a conversation's model is picked; messages written while an answer streams are queued (edited,
removed, sent one at a time in order, paused by a failed answer); several conversations are
deleted at once; Home asks Fable and answers inline."""

from __future__ import annotations

import asyncio
import re
import threading
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


async def test_messages_written_during_an_answer_are_queued_edited_and_sent_in_order(
        chat_ui: Session, chat_llm: FakeLLM) -> None:
    page = chat_ui.page
    await chat_ui.register("ada")
    first, second = threading.Event(), threading.Event()
    chat_llm.replies.extend([Reply("Answer one.", hold=first), Reply("Answer two, cut", hold=second, cut=True),
                             Reply("Answer three.")])
    asked = lambda: [_last_user(b) for b in chat_llm.chat_bodies() if b.get("tools")]  # noqa: E731
    await page.goto("/chat")
    await send(chat_ui, "One")
    await expect(page.locator("#chat-stop")).to_be_visible()
    await send(chat_ui, "Two, with a typo")
    await send(chat_ui, "Three")
    await send(chat_ui, "Never mind")
    queued = page.locator("#chat-queue .queued")
    await expect(queued).to_have_count(3)
    await expect(queued.first).to_contain_text("queued")
    await expect(page.locator("#chat-input")).to_have_value("")
    await expect(page.locator("#chat-send")).to_have_text("Queue")

    await queued.first.get_by_role("button", name="Edit queued message").click()
    await page.locator(".queued-input").fill("Two")
    await page.press(".queued-input", "Enter")
    await expect(queued.first.locator(".queued-text")).to_have_text("Two")
    await queued.nth(2).get_by_role("button", name="Remove queued message").click()
    await expect(queued).to_have_count(2)
    assert await page.evaluate("document.activeElement.matches('.queued-edit')"), "focus stays in the queue"
    await chat_ui.shot("chat-queue")
    assert asked() == ["One"], "nothing else went while the answer was held"

    first.set()  # "One" is answered: "Two" goes, and "Three" waits for its answer
    await expect(queued).to_have_count(1)
    assert await eventually(lambda: _async(len(asked())), 2)
    await asyncio.sleep(scaled(0.5))
    assert asked() == ["One", "Two"], "never two messages at once"
    second.set()  # "Two"'s answer is cut off: the queue pauses
    await expect(page.locator("#chat-queue-status")).to_contain_text("Queue paused")
    await expect(page.locator(".msg-assistant[data-status=interrupted]")).to_have_count(1)
    await asyncio.sleep(scaled(0.3))
    assert asked() == ["One", "Two"] and await queued.count() == 1
    await page.locator("#chat-queue-resume").click()
    await expect(queued).to_have_count(0)
    await expect(page.locator(".msg-assistant[data-status=done][data-rendered=true]")).to_have_count(2)
    assert asked() == ["One", "Two", "Three"]
    await expect(page).to_have_url(re.compile(r"/chat/\d+$"))
    stored = await chat_ui.api("GET", f"/chat/conversations/{page.url.rsplit('/', 1)[1]}")
    assert [(m["role"], m["content"]) for m in stored["messages"]] == [
        ("user", "One"), ("assistant", "Answer one."), ("user", "Two"), ("assistant", "Answer two, cut"),
        ("user", "Three"), ("assistant", "Answer three.")]
    assert not chat_ui.watch.errors


async def test_several_conversations_are_selected_and_deleted_at_once(chat_ui: Session) -> None:
    page = chat_ui.page
    await chat_ui.register("ada")
    titles = ("Keep", "Bees", "Kites", "Tides")
    ids = [(await chat_ui.api("POST", "/chat/conversations", {"title": t}))["id"] for t in titles]
    await page.goto(f"/chat/{ids[1]}")  # one of those deleted is open
    boxes = page.locator("#conversation-list .conv-select")
    await expect(boxes).to_have_count(4)
    await page.locator("#conv-select-all").check()
    await expect(page.locator("#conv-selected-count")).to_have_text("4 selected")
    await page.locator("#conv-select-all").uncheck()
    await expect(page.locator("#conv-delete-selected")).to_be_hidden()
    await boxes.nth(0).click()  # newest first: Tides, Kites, Bees, Keep
    await boxes.nth(2).click(modifiers=["Shift"])  # a range
    await expect(page.locator("#conv-selected-count")).to_have_text("3 selected")
    await boxes.nth(1).focus()
    await page.keyboard.press("Space")  # by keyboard: untick Kites, then tick it again
    await expect(page.locator("#conv-selected-count")).to_have_text("2 selected")
    await page.keyboard.press("Space")
    await expect(page.locator("#conv-selected-count")).to_have_text("3 selected")
    assert await page.locator("#conv-select-all").evaluate("b => b.indeterminate")
    delete = page.get_by_role("button", name="Delete 3 conversations")
    await delete.focus()
    await page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog")
    await expect(dialog).to_contain_text("Delete 3 conversations?")
    await expect(dialog).to_contain_text("cannot be undone")
    await dialog.get_by_role("button", name="Delete").click()
    await page.wait_for_url("**/chat")
    await expect(page.locator("#conversation-list .conv")).to_have_count(1)
    await expect(page.locator("#conversation-list")).to_contain_text("Keep")
    assert [c["title"] for c in (await chat_ui.api("GET", "/chat/conversations"))["items"]] == ["Keep"]
    assert not chat_ui.watch.errors and not chat_ui.watch.dialogs


async def test_home_asks_fable_inline_and_continues_in_chat(chat_ui: Session, chat_llm: FakeLLM) -> None:
    page = chat_ui.page
    await chat_ui.register("ada")
    rest = threading.Event()
    chat_llm.replies.append(Reply("Your **garden** needs water today, and the beans want stakes.", pause=(3, rest)))
    await page.goto("/")
    ask = page.locator("#home-ask")
    await expect(ask.get_by_role("heading", name="Ask Fable")).to_be_visible()
    await expect(page.locator("#home-continue")).to_be_hidden()
    await ask.get_by_role("textbox", name="Message").fill("What about the garden?")
    await ask.get_by_role("textbox", name="Message").press("Enter")
    await expect(ask.locator(".msg-assistant[data-status=generating] strong")).to_have_text("garden")  # streams inline
    rest.set()
    await expect(ask.locator(".msg-assistant[data-rendered=true]")).to_contain_text("the beans want stakes.")
    await expect(page).to_have_url(re.compile(r"/$"))  # Home stays Home
    await chat_ui.shot("home-ask")
    await page.locator("#home-continue").click()
    await expect(page).to_have_url(re.compile(r"/chat/\d+$"))
    await expect(page.locator(".msg-user")).to_have_text("What about the garden?")
    await expect(page.locator(".msg-assistant strong")).to_have_text("garden")
    await expect(page.locator("#conversation-list .conv")).to_have_count(1)
    assert not chat_ui.watch.errors


def _last_user(body: dict[str, Any]) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


async def _async(value: Any) -> Any:
    return value


async def eventually(read: Callable[[], Awaitable[Any]], wanted: Any) -> bool:
    """Whether ``read()`` gives ``wanted`` within five seconds."""
    for _ in range(round(scaled(5) / 0.05)):
        if await read() == wanted:
            return True
        await asyncio.sleep(0.05)
    return False


async def _model(ui: Session, conv_id: int) -> str | None:
    return (await ui.api("GET", f"/chat/conversations/{conv_id}")).get("model")
