"""The assistant in a real Chromium against a real server whose LLM is the scripted fake Ollama
(tests/support/fake_llm.py, real HTTP): streamed answers, resume after a dropped stream, tool cards,
confirm / deny of a near-duplicate, stop, the note assist panel, models admin, and the calm
notice when there is no model. Screenshots of the chat page and the assist panel go to
docs/screenshots."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Route, expect
from support.browser import Session
from support.fake_llm import FakeLLM, Reply, embed_text

from fable_core.assistant.context import INJECT_RELEVANCE, SUGGEST_RELEVANCE
from fable_core.knowledge.vectors import note_text
from fable_core.runtime import Fable

pytestmark = pytest.mark.browser

BODY = ("Tomatoes need full sun, deep watering twice a week, and stakes once they reach knee "
        "height in early June.")


async def send(ui: Session, text: str) -> None:
    await ui.page.fill("#chat-input", text)
    await ui.page.press("#chat-input", "Enter")


async def conversation(ui: Session) -> dict:
    await expect(ui.page).to_have_url(re.compile(r"/chat/\d+$"))
    conv_id = int(ui.page.url.rsplit("/", 1)[1])
    return await ui.api("GET", f"/chat/conversations/{conv_id}")


async def test_streamed_answer_is_stored_renamed_and_deleted(chat_ui: Session, chat_llm: FakeLLM) -> None:
    page = chat_ui.page
    await chat_ui.register("ada")
    answer = "The **garden** plan is on track: beds are dug, seeds are ordered, and the fence is next."
    chat_llm.replies.append(Reply(answer, delay=0.08))
    await page.goto("/")
    await page.get_by_role("link", name="Assistant").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text("New conversation")
    await send(chat_ui, "How is the garden plan?")
    streaming = page.locator(".msg-assistant[data-status=generating] .msg-text")
    await expect(streaming.locator("strong")).to_have_text("garden")  # rendered while it streams
    reply = page.locator(".msg-assistant[data-rendered=true]")
    await expect(reply.locator("strong")).to_have_text("garden")  # rendered by the server once complete
    await expect(page.locator("#chat-send")).to_be_visible()

    stored = await conversation(chat_ui)
    assert [(m["role"], m["status"], m["content"]) for m in stored["messages"]] == [
        ("user", "done", "How is the garden plan?"), ("assistant", "done", answer)]

    await page.reload()
    await expect(page.locator(".msg-user")).to_have_text("How is the garden plan?")
    await expect(page.locator(".msg-assistant strong")).to_have_text("garden")
    await expect(page.locator(".msg-assistant")).to_contain_text("the fence is next.")

    item = page.locator(f'#conversation-list li[data-id="{stored["id"]}"]')
    await item.locator(".conv-rename").click()
    await page.fill(".conv-title-input", "Garden check-in")
    await page.press(".conv-title-input", "Enter")
    await expect(item.locator(".title")).to_have_text("Garden check-in")
    assert (await chat_ui.api("GET", f"/chat/conversations/{stored['id']}"))["title"] == "Garden check-in"

    await item.locator(".conv-delete").click()
    await page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    await page.wait_for_url("**/chat")
    await expect(page.locator("#conversation-list")).to_contain_text("No conversations yet.")
    assert (await chat_ui.api("GET", "/chat/conversations"))["items"] == []
    assert not chat_ui.watch.errors and not chat_ui.watch.dialogs


async def test_a_dropped_stream_resumes_with_last_event_id(chat_ui: Session, chat_llm: FakeLLM) -> None:
    """The first connection to the stream is cut after three events; the page reconnects with
    Last-Event-ID and the text ends up whole, with nothing repeated."""
    page = chat_ui.page
    await chat_ui.register("ada")
    answer = " ".join(f"word{i}" for i in range(40))
    chat_llm.replies.append(Reply(answer))
    seen: list[str | None] = []

    async def cut_first(route: Route) -> None:
        seen.append(route.request.headers.get("last-event-id"))
        if len(seen) > 1:
            await route.continue_()
            return
        response = await route.fetch()
        frames = (await response.text()).split("\n\n")
        await route.fulfill(response=response, body="\n\n".join(frames[:3]) + "\n\n")

    await page.route("**/generation/stream", cut_first)
    await page.goto("/chat")
    await send(chat_ui, "count for me")
    await expect(page.locator(".msg-assistant[data-rendered=true]")).to_have_text(answer)
    assert len(seen) == 2 and seen[0] is None
    assert seen[1] and re.fullmatch(r"\d+:3", seen[1]), seen
    assert not chat_ui.watch.errors


async def test_a_tool_call_card_creates_a_task_that_appears_in_tasks(chat_ui: Session, chat_llm: FakeLLM) -> None:
    page = chat_ui.page
    await chat_ui.register("ada")
    chat_llm.replies.extend([
        Reply("I'll add that.", tool_calls=[("create_note", {"title": "Call the plumber", "status": "todo",
                                                             "priority": "high"})]),
        Reply("Added **Call the plumber** to your tasks."),
    ])
    await page.goto("/chat")
    await send(chat_ui, "Remind me to call the plumber, it's urgent")
    card = page.locator('.tool-card[data-tool="create_note"]')
    await expect(card).to_have_attribute("data-state", "ok")
    await expect(card).to_contain_text("Task “Call the plumber”")
    await card.locator("summary", has_text="Arguments").click()
    await expect(card.locator(".tool-args pre").first).to_contain_text('"priority": "high"')
    await expect(page.locator(".msg-assistant[data-rendered=true] strong")).to_have_text("Call the plumber")
    await chat_ui.shot("chat")

    await page.get_by_role("link", name="Tasks").click()
    await expect(page.locator("#task-groups")).to_contain_text("Call the plumber")
    tasks = (await chat_ui.api("GET", "/notes", {"kind": "task"}))["items"]
    assert [(t["title"], t["priority"]) for t in tasks] == [("Call the plumber", "high")]
    assert not chat_ui.watch.errors


async def test_confirm_and_deny_a_near_duplicate(chat_ui: Session, chat_llm: FakeLLM, chat_fable: Fable) -> None:
    page = chat_ui.page
    await chat_ui.register("ada")
    await chat_ui.api("POST", "/notes", {"title": "Tomato care", "body": BODY})
    await chat_fable.assistant.worker.idle()  # its embedding is written
    chat_llm.replies.extend([
        Reply("", tool_calls=[("create_note", {"title": "Growing tomatoes", "body": BODY})]),
        Reply("You already have a note like that."),
        Reply("", tool_calls=[("create_note", {"title": "Tomatoes again", "body": BODY})]),
        Reply("Same again."),
    ])
    await page.goto("/chat")
    await send(chat_ui, "Save a note on growing tomatoes")
    first = page.locator(".tool-card").nth(0)
    await expect(first).to_have_attribute("data-state", "confirm")
    await expect(first).to_contain_text("Tomato care")
    await expect(page.locator("#chat-send")).to_be_visible()
    await first.locator(".tool-confirm").click()
    await expect(first).to_have_attribute("data-state", "ok")
    await expect(first).to_contain_text("Note “Growing tomatoes”")

    await send(chat_ui, "And once more")
    second = page.locator(".tool-card").nth(1)
    await expect(second).to_have_attribute("data-state", "confirm")
    await second.locator(".tool-deny").click()
    await expect(second).to_have_attribute("data-state", "denied")
    titles = sorted(n["title"] for n in (await chat_ui.api("GET", "/notes"))["items"])
    assert titles == ["Growing tomatoes", "Tomato care"]
    assert not chat_ui.watch.errors


async def test_a_capture_the_model_could_not_read_is_offered_as_a_plain_note(
    chat_ui: Session, chat_llm: FakeLLM
) -> None:
    """Home's quick capture: a model answering a bare date saves nothing and says so, with a
    "Save as plain note" action; a good answer is saved as the task it describes. In the chat,
    the same answer is a card whose Confirm saves the plain note."""
    page = chat_ui.page
    await chat_ui.register("ada")
    await page.goto("/")
    chat_llm.plain_replies.append(Reply("2026-12-10"))
    await page.fill("#capture", "Dentist on the 10th. Bring the insurance card.")
    await page.press("#capture", "Enter")
    notice = page.locator("#capture-notice")
    await expect(notice).to_contain_text("The model's answer could not be read as a note or task. Nothing was saved.")
    await expect(notice).to_contain_text("Saved as a plain note, its title would be: “Dentist on the 10th.”")
    await expect(page.locator("#capture")).to_have_value("Dentist on the 10th. Bring the insurance card.")
    assert (await chat_ui.api("GET", "/notes"))["items"] == []
    await chat_ui.shot("capture-unreadable")
    await notice.get_by_role("button", name="Save as plain note").click()
    await expect(page.locator(".toast")).to_contain_text("Saved “Dentist on the 10th.”")
    await expect(notice).to_be_hidden()
    await expect(page.locator("#capture")).to_have_value("")
    [note] = (await chat_ui.api("GET", "/notes"))["items"]
    assert (note["title"], note["kind"]) == ("Dentist on the 10th.", "note")

    chat_llm.plain_replies.append(Reply('{"kind": "task", "title": "Call the bank", "due_date": "2030-12-04"}'))
    await page.fill("#capture", "call the bank on the 4th")
    await page.press("#capture", "Enter")
    await expect(page.locator(".toast").last).to_contain_text("Saved “Call the bank”")
    await expect(notice).to_be_hidden()

    chat_llm.replies.extend([Reply("", tool_calls=[("quick_capture", {"text": "Pick up the parcel"})]),
                             Reply("I could not read that.")])
    chat_llm.plain_replies.append(Reply("2026-12-10"))
    await page.goto("/chat")
    await send(chat_ui, "capture: pick up the parcel")
    card = page.locator('.tool-card[data-tool="quick_capture"]')
    await expect(card).to_have_attribute("data-state", "confirm")
    await expect(card).to_contain_text("could not be read as a note or task")
    await card.locator(".tool-confirm").click()
    await expect(card).to_contain_text("Note “Pick up the parcel”")
    titles = sorted(n["title"] for n in (await chat_ui.api("GET", "/notes"))["items"])
    assert titles == ["Call the bank", "Dentist on the 10th.", "Pick up the parcel"]
    assert not chat_ui.watch.errors


async def test_stop_keeps_the_partial_answer(chat_ui: Session, chat_llm: FakeLLM) -> None:
    page = chat_ui.page
    await chat_ui.register("ada")
    answer = " ".join(f"word{i}" for i in range(200))
    chat_llm.replies.append(Reply(answer, delay=0.05))
    await page.goto("/chat")
    await send(chat_ui, "count slowly")
    await expect(page.locator(".msg-assistant .msg-text")).to_contain_text("word3")
    await page.click("#chat-stop")
    reply = page.locator(".msg-assistant[data-status=stopped][data-rendered=true]")
    await expect(reply).to_contain_text("Stopped.")
    await expect(page.locator("#chat-send")).to_be_visible()
    shown = (await reply.locator(".msg-text").inner_text()).strip()
    stored = (await conversation(chat_ui))["messages"][1]
    assert stored["status"] == "stopped"
    assert answer.startswith(stored["content"]) and len(stored["content"]) < len(answer)
    assert shown == stored["content"].strip()
    assert not chat_ui.watch.errors


async def test_assist_proposes_a_diff_kept_until_accepted_and_tags_are_suggested(
    chat_ui: Session, chat_llm: FakeLLM
) -> None:
    page = chat_ui.page
    await chat_ui.register("ada")
    note = await chat_ui.api("POST", "/notes", {"title": "Packing list",
                                                "body": "## Clothes\n\nsocks\nshirts\n\n## Gear\n\ntent\nstove"})
    proposal = "- [ ] socks\n- [ ] shirts\n- [ ] a warm jacket"
    chat_llm.plain_replies.append(Reply(proposal, delay=0.05))
    await page.goto(f"/notes/{note['id']}")
    await expect(page.locator("#assist-panel")).to_be_hidden()
    await page.click("#assist-note")
    await page.fill("#assist-instruction", "turn it into a checklist and add a jacket")
    await page.select_option("#assist-section", "Clothes")
    await page.evaluate(_RECORD_STREAMED_TEXT)
    await page.click("#assist-run")
    diff = page.locator("#assist-diff")
    await expect(diff.locator(".add")).to_contain_text(["+ - [ ] socks", "+ - [ ] shirts", "+ - [ ] a warm jacket"])
    await expect(diff.locator(".del")).to_contain_text(["- socks", "- shirts"])
    await expect(page.locator("#assist-dropped")).to_have_count(0)  # it keeps every word it replaces
    grown = [t for t in dict.fromkeys(await page.evaluate("window.streamedTexts")) if t]
    assert len(grown) >= 3 and all(proposal.startswith(t) for t in grown), grown  # it grew as it streamed
    await chat_ui.shot("assist")
    assert (await chat_ui.api("GET", f"/notes/{note['id']}"))["version"] == note["version"]  # unchanged until accepted

    await page.reload()  # the server kept the draft
    await expect(page.locator("#assist-pending")).to_contain_text("turn it into a checklist")
    await page.click("#assist-accept")
    await expect(page.locator("#note-body")).to_contain_text("a warm jacket")
    await expect(page.locator("#assist-panel")).to_be_hidden()
    body = (await chat_ui.api("GET", f"/notes/{note['id']}"))["body"]
    assert "- [ ] a warm jacket" in body and "## Gear\n\ntent\nstove" in body and "\nsocks" not in body

    chat_llm.plain_replies.append(Reply("Just bring the tent."))
    await page.click("#assist-note")
    await page.fill("#assist-instruction", "shorter")
    await page.click("#assist-run")
    await expect(page.locator("#assist-diff .add")).to_have_text(["+ Just bring the tent."])
    await expect(page.locator("#assist-dropped")).to_contain_text("leaves out")  # issue 40: said, not silent
    await page.click("#assist-reject")
    await expect(page.locator("#assist-diff")).to_have_count(0)
    after_reject = await chat_ui.api("GET", f"/notes/{note['id']}")
    assert after_reject["body"] == body
    drafts = await page.request.get(f"{chat_ui.base_url}/api/notes/{note['id']}/draft")
    assert (drafts.status, (await drafts.json())["status"]) == (200, "none")

    chat_llm.plain_replies.extend([Reply("Tags: the user wants a list"), Reply("camping, travel")])
    await page.click("#edit-note")
    await page.click("#suggest-tags")
    await expect(page.locator("#tag-suggestions-none")).to_have_text(
        "No suggestions: the model suggested no usable tags: 'the user wants a list' (too long).")
    await page.click("#suggest-tags")
    await page.locator(".suggested-tag", has_text="#camping").click()
    await expect(page.locator(".tag-input .chip")).to_have_text(["#camping×"])
    await page.click("#save-note")
    await expect(page.locator("#note-body")).to_be_visible()
    assert (await chat_ui.api("GET", f"/notes/{note['id']}"))["tags"] == ["camping"]
    assert not chat_ui.watch.errors


_RECORD_STREAMED_TEXT = """() => {
  window.streamedTexts = [];
  new MutationObserver(() => {
    const streamed = document.querySelector("#assist-stream");
    if (streamed) window.streamedTexts.push(streamed.textContent);
  }).observe(document.body, { subtree: true, childList: true, characterData: true });
}"""


async def test_models_admin_lists_pulls_with_progress_and_deletes(chat_ui: Session, chat_llm: FakeLLM) -> None:
    page = chat_ui.page
    await chat_ui.register("ada")  # the first user: admin
    await page.goto("/settings/models")
    card = page.locator("#models-card")
    await expect(card.locator('tr[data-model="qwen3:8b"]')).to_be_visible()
    await page.fill("#pull-name", "tiny:1b")
    await page.click("#pull-model")
    await expect(card.locator('tr[data-model="tiny:1b"]')).to_be_visible()
    assert await page.locator("#pull-progress").evaluate("el => el.value") == 100
    await expect(page.locator("#pull-status")).to_have_text("success")
    await card.locator('tr[data-model="tiny:1b"] .model-delete').click()
    await page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    await expect(card.locator('tr[data-model="tiny:1b"]')).to_have_count(0)
    assert "tiny:1b" not in chat_llm.models
    assert not chat_ui.watch.errors


async def test_without_a_model_the_ai_features_show_a_calm_notice(ui: Session) -> None:
    """The session's app has no LLM provider: chat, models, assist and Home's "Ask Fable" answer
    503, shown inline."""
    page = ui.page
    await ui.register("ada")
    await page.goto("/settings/models")
    await expect(page.locator("#models-card .notice")).to_contain_text("No model available")
    await page.goto("/chat")
    await send(ui, "hello?")
    await expect(page.locator("#chat-notice .notice")).to_contain_text("No model available")
    await expect(page.locator("#chat-input")).to_have_value("hello?")  # nothing lost
    note = await ui.api("POST", "/notes", {"title": "Packing list", "body": "socks"})
    await page.goto(f"/notes/{note['id']}")
    await page.click("#assist-note")
    await page.fill("#assist-instruction", "shorter")
    await page.click("#assist-run")
    await expect(page.locator("#assist-panel .notice")).to_contain_text("No model available")
    await expect(page.locator("#assist-instruction")).to_have_value("shorter")
    await page.goto("/")
    await expect(page.locator("#home-ask #missing-model")).to_contain_text("No model available")  # said up front
    await page.locator("#home-ask #chat-input").fill("what is due?")
    await page.locator("#home-ask #chat-input").press("Enter")
    await expect(page.locator("#home-ask #chat-notice .notice")).to_contain_text("No model available")
    await expect(page.locator("#home-ask #chat-input")).to_have_value("what is due?")  # nothing lost
    await expect(page.locator("#home-continue")).to_be_hidden()
    await page.fill("#capture", "Buy stamps. The big ones.")
    await page.press("#capture", "Enter")
    await expect(page.locator(".toast")).to_contain_text("Saved “Buy stamps.”")
    assert [e for e in ui.watch.errors if "503" not in e] == []


async def _message_suggesting(fable: Fable, title: str, body: str) -> str:
    """A message whose (deterministic, fake) embedding lies well inside the band in which a note
    is suggested rather than used: between the model's calibrated suggest and inject cuts."""
    assert fable.assistant is not None and fable.assistant.embedder is not None
    calibration = await fable.assistant.embedder.calibrated()
    note = embed_text(note_text(title, body))
    words = re.findall(r"[a-z]{3,}", body.lower())
    for n in range(1, len(words) + 1):
        for filler in range(6):
            text = " ".join(words[:n] + [f"zz{i}q" for i in range(filler)])
            vector = embed_text(text)
            similarity = sum(a * b for a, b in zip(note, vector, strict=True))
            low = calibration.similarity_at(vector, SUGGEST_RELEVANCE)
            high = calibration.similarity_at(vector, INJECT_RELEVANCE)
            if low + 0.02 <= similarity <= high - 0.02:
                return text
    raise AssertionError("no message in the suggestion band")


async def test_suggested_note_attaches_and_the_scope_chip_follows_the_model(
    chat_ui: Session, chat_llm: FakeLLM, chat_fable: Fable
) -> None:
    page = chat_ui.page
    await chat_ui.register("ada")
    await chat_ui.api("POST", "/notes", {"title": "Tomato care", "body": BODY})
    project = await chat_ui.api("POST", "/projects", {"title": "Kitchen"})
    await chat_fable.assistant.worker.idle()
    await page.goto("/chat")
    await expect(page.locator("#scope-chip")).to_contain_text("Notes outside projects")
    await send(chat_ui, await _message_suggesting(chat_fable, "Tomato care", BODY))
    suggestion = page.locator("#context-suggested .suggested-note", has_text="Tomato care")
    await suggestion.click()
    await expect(page.locator("#context-attached .attached-chip")).to_have_text(["Tomato care×"])
    await expect(page.locator("#attached-count")).to_have_text("1 note attached")

    chat_llm.replies.extend([
        Reply("", tool_calls=[("set_rag_scope", {"all_notes": True})]), Reply("Now I look at everything."),
    ])
    await send(chat_ui, "What does my tomato note say? Look at all my notes from now on.")
    await expect(page.locator("#scope-chip")).to_contain_text("All notes")  # from the done event
    await expect(page.locator("#context-attached")).to_contain_text("Nothing attached.")
    asked = [b for b in chat_llm.chat_bodies() if b.get("tools") and "tomato note" in b["messages"][-1]["content"]]
    given = asked[0]["messages"][-1]["content"]  # with the message, not in the system prompt
    assert "Attached note [[Tomato care]]" in given and BODY in given

    await page.click("#scope-chip")
    await page.get_by_role("dialog").get_by_role("button", name="Project: Kitchen").click()
    await expect(page.locator("#scope-chip")).to_contain_text("Project: Kitchen")
    stored = await conversation(chat_ui)
    assert stored["rag_project_id"] == project["id"]
    await page.reload()
    await expect(page.locator("#scope-chip")).to_contain_text("Project: Kitchen")
    assert not chat_ui.watch.errors


async def test_a_cut_answer_shows_as_interrupted_keeps_its_text_and_retries(
    chat_ui: Session, chat_llm: FakeLLM
) -> None:
    page = chat_ui.page
    await chat_ui.register("ada")
    chat_llm.replies.append(Reply("The sea is wide and", cut=True))  # the server ended it unfinished
    await page.goto("/chat")
    await send(chat_ui, "Describe the sea")
    reply = page.locator(".msg-assistant[data-status=interrupted]")
    await expect(reply.locator(".msg-status")).to_contain_text("Interrupted before the model finished")
    await expect(reply.locator(".msg-text")).to_have_text("The sea is wide and")
    await expect(page.locator("#chat-semantic-notice")).to_be_empty()  # the fake serves the embedding model
    await page.reload()
    await expect(reply.locator(".msg-status")).to_contain_text("cut off before the model finished")
    await expect(reply.locator(".msg-text")).to_have_text("The sea is wide and")

    chat_llm.replies.append(Reply("The sea is calm today."))
    await reply.get_by_role("button", name="Retry").click()
    await expect(page.locator(".msg-assistant[data-status=done] .msg-text")).to_have_text("The sea is calm today.")
    await expect(page.locator(".msg-assistant")).to_have_count(1)
    stored = (await conversation(chat_ui))["messages"]
    assert [(m["role"], m["status"], m["content"]) for m in stored] == [
        ("user", "done", "Describe the sea"), ("assistant", "done", "The sea is calm today.")]
    assert not chat_ui.watch.errors


async def test_a_failed_answer_shows_its_error_in_words_after_a_reload(
    chat_ui: Session, chat_llm: FakeLLM, chat_fable: Fable
) -> None:
    page = chat_ui.page
    await chat_ui.register("ada")
    provider = chat_fable.assistant.provider
    provider.model = "llama9:70b"  # a model the server does not serve
    try:
        await page.goto("/chat")
        await send(chat_ui, "hello?")
        failed = page.locator(".msg-assistant[data-status=error] .msg-status")
        await expect(failed).to_contain_text("model 'llama9:70b' is not served by")
        await expect(failed).to_contain_text("available: qwen3:8b")
    finally:
        provider.model = "qwen3:8b"
    await page.reload()
    await expect(failed).to_contain_text("model 'llama9:70b' is not served by")
    await expect(page.locator(".msg-assistant[data-status=error]").get_by_role("button", name="Retry")).to_be_visible()


async def test_without_an_embedding_model_search_and_chat_say_semantic_search_is_off(ui: Session) -> None:
    """The session's app has no LLM provider: the reason comes from /api/health."""
    page = ui.page
    await ui.register("ada")
    await ui.api("POST", "/notes", {"title": "Packing list", "body": "socks"})
    await page.goto("/notes?q=socks")
    await expect(page.locator(".note-item, li").filter(has_text="Packing list").first).to_be_visible()
    notice = page.locator("#search-notice .semantic-notice")
    await expect(notice).to_contain_text(
        "Semantic search is off: no embedding model is configured (LLM_PROVIDER is none)")
    await page.goto("/notes")
    await expect(page.locator("#search-notice")).to_be_empty()  # only a search says it
    await page.goto("/chat")
    await expect(page.locator("#chat-semantic-notice .semantic-notice")).to_contain_text(
        "Semantic search is off: no embedding model is configured")


async def test_a_fable_without_a_model_says_so_before_anyone_asks(ui: Session, session_at, base_url: str) -> None:
    """Issue 38, item 7: the chat page says there is no model up front, with the setting that
    fixes it to an administrator and "ask your administrator" to a member."""
    page = ui.page
    await ui.register("ada_admin")  # the first account: the administrator
    await page.goto("/chat")
    said = page.locator("#missing-model")
    await expect(said).to_contain_text("This Fable runs without a model")
    await expect(said).to_contain_text("LLM_PROVIDER is none: set it to ollama (with OLLAMA_URL)")
    async with session_at(base_url) as member:
        await member.register("max_member")
        await member.page.goto("/chat")
        await expect(member.page.locator("#missing-model")).to_contain_text("Ask your administrator")
        await expect(member.page.locator("#missing-model")).not_to_contain_text("LLM_PROVIDER")
    assert not ui.watch.errors
