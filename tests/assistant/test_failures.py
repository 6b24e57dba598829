"""Honest failure: an answer the model server cut off is kept as ``interrupted`` (never
``done``), a failed one keeps its error in words, both can be retried, and the health probe
says when the configured model is not served."""

from __future__ import annotations

import threading

import httpx
import pytest
from sqlalchemy import select
from support.chat import new_conversation, text_of, turn
from support.fake_llm import FakeLLM, Reply

from fable_core.assistant.service import Assistant
from fable_core.assistant.status import PROBE_TIMEOUT
from fable_core.db.models import Message, Note
from fable_core.errors import Conflict
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app


async def answers(fable: Fable) -> list[tuple[str, str, str | None]]:
    async with fable.db.reading() as s:
        return [tuple(r) for r in (await s.execute(select(Message.content, Message.status, Message.error)
                                                   .where(Message.role == "assistant").order_by(Message.id))).all()]


async def test_an_answer_cut_off_by_the_server_is_kept_interrupted_not_done(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    fake.replies.append(Reply("The sea is wide and", cut=True))
    events = await turn(assistant, alice, conv, "Describe the sea")
    assert text_of(events) == "The sea is wide and"
    assert events[-1].event == "error" and events[-1].data["status"] == "interrupted"
    assert events[-1].data["type"] == "interrupted"
    [(content, status, error)] = await answers(ai_fable)
    assert (content, status) == ("The sea is wide and", "interrupted")
    assert error is not None and "cut off before the model finished" in error
    detail = await ai_fable.call("get_conversation", {"conversation_id": conv}, alice)
    assert detail["messages"][-1]["status"] == "interrupted" and detail["messages"][-1]["error"] == error
    await assistant.generations.close()  # no buffer: a reconnecting client gets the stored answer
    stored = await ai_fable.call("follow_answer", {"conversation_id": conv}, alice)
    assert (stored["status"], stored["error"], stored["content"]) == ("interrupted", error, "The sea is wide and")


async def test_a_tool_call_in_a_cut_stream_does_not_run(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    """A tool turn cut off is not an empty complete answer (what Fable stored before), and the
    half-received call is not run."""
    conv = await new_conversation(ai_fable, alice)
    fake.replies.append(Reply("", [("create_note", {"title": "Never made"})], cut=True))
    events = await turn(assistant, alice, conv, "make a note")
    assert events[-1].event == "error" and events[-1].data["status"] == "interrupted"
    assert not [e for e in events if e.event == "tool_call"]
    async with ai_fable.db.reading() as s:
        assert (await s.execute(select(Note))).first() is None
    assert [status for _, status, _ in await answers(ai_fable)] == ["interrupted"]


async def test_a_title_cut_off_is_not_used(ai_fable: Fable, assistant: Assistant, fake: FakeLLM,
                                           alice: Caller) -> None:
    conv = await new_conversation(ai_fable, alice)
    fake.replies.append(Reply("Fine."))
    fake.plain_replies.append(Reply("A half tit", cut=True))  # the title, generated after the answer
    await turn(assistant, alice, conv, "hello there")
    detail = await ai_fable.call("get_conversation", {"conversation_id": conv}, alice)
    assert detail["title"] != "A half tit"
    assert [s for _, s, _ in await answers(ai_fable)] == ["done"]


async def test_a_model_the_server_does_not_serve_fails_the_answer_in_words(
    ai_fable: Fable, fake: FakeLLM, alice: Caller
) -> None:
    app = await Fable.open(ai_fable.settings.model_copy(update={"ollama_model": "llama9:70b"}))
    try:
        conv = await new_conversation(app, alice)
        events = await turn(app.assistant, alice, conv, "hello")
        health = await app.assistant.status.check()
        offered = {t.name for t in app.registry.for_caller(alice, app.availability)}
    finally:
        await app.close()
    expected = (f"no model available: model 'llama9:70b' is not served by {ai_fable.settings.ollama_url}; "
                "available: qwen3:8b, nomic-embed-text, fake-embed")
    assert events[-1].event == "error" and events[-1].data["message"] == expected
    assert await answers(ai_fable) == [("", "error", expected)]
    assert health.status == "model missing" and health.detail == expected.removeprefix("no model available: ")
    assert "send_message" not in offered and "quick_capture" not in offered and "list_notes" in offered


async def test_a_server_silent_past_the_first_token_timeout_fails_the_answer(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    hold = threading.Event()
    fake.replies.append(Reply("far too late", hold=hold))
    conv = await new_conversation(ai_fable, alice)
    assistant.provider.first_token_timeout = 0.3
    try:
        events = await turn(assistant, alice, conv, "hello")
    finally:
        hold.set()
        assistant.provider.first_token_timeout = ai_fable.settings.llm_first_token_timeout
    assert events[-1].event == "error" and events[-1].data["status"] == "error"
    [(content, status, error)] = await answers(ai_fable)
    assert (content, status) == ("", "error")
    assert error is not None and "has not started answering after 0.3 s" in error
    assert "raise LLM_FIRST_TOKEN_TIMEOUT" in error and not error.startswith("no model available")


async def test_retry_sends_the_same_message_again_in_place_of_the_failed_answer(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    fake.replies.append(Reply("The answer was", cut=True))
    await turn(assistant, alice, conv, "what is the answer?")
    fake.replies.append(Reply("The answer is 42."))
    started = await ai_fable.call("retry_answer", {"conversation_id": conv}, alice)
    events = [e async for e in assistant.follow(alice, conv)]
    await assistant.wait(conv)
    assert text_of(events) == "The answer is 42." and events[-1].event == "done"
    detail = await ai_fable.call("get_conversation", {"conversation_id": conv}, alice)
    assert [(m["role"], m["content"], m["status"]) for m in detail["messages"]] == [
        ("user", "what is the answer?", "done"), ("assistant", "The answer is 42.", "done")]
    assert detail["messages"][-1]["id"] == started["message_id"]
    prompt = [b for b in fake.chat_bodies() if b.get("tools")][-1]["messages"]  # the answer's, not the title's
    assert [m["content"] for m in prompt if m["role"] != "system"] == ["what is the answer?"], \
        "the failed answer and the first sending are not in the prompt"


async def test_a_complete_answer_cannot_be_retried_and_nothing_changes(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller, bob: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    fake.replies.append(Reply("All good."))
    await turn(assistant, alice, conv, "hi")
    before = await ai_fable.call("get_conversation", {"conversation_id": conv}, alice)
    with pytest.raises(Conflict, match="the last answer is done"):
        await ai_fable.call("retry_answer", {"conversation_id": conv}, alice)
    empty = await new_conversation(ai_fable, alice)
    with pytest.raises(Conflict, match="has no answer to retry"):
        await ai_fable.call("retry_answer", {"conversation_id": empty}, alice)
    from fable_core.errors import NotFound

    with pytest.raises(NotFound):
        await ai_fable.call("retry_answer", {"conversation_id": conv}, bob)
    after = await ai_fable.call("get_conversation", {"conversation_id": conv}, alice)
    assert after["messages"] == before["messages"]


async def test_health_reports_a_missing_model_and_why_semantic_search_is_off(
    ai_fable: Fable, fake: FakeLLM
) -> None:
    transport = httpx.ASGITransport(create_app(ai_fable))
    status = ai_fable.assistant.status
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        await status.check()
        ok = (await client.get("/api/health")).json()["llm"]
        fake.models[:] = ["qwen3:8b"]
        await status.check()
        no_embed = (await client.get("/api/health")).json()["llm"]
        fake.models[:] = ["fake-embed"]
        await status.check()
        missing = (await client.get("/api/health")).json()["llm"]
    fake.reset()
    await status.check()
    assert ok["status"] == "ok" and ok["semantic_search"] == {"on": True, "reason": ""}
    assert no_embed["status"] == "ok" and no_embed["semantic_search"] == {
        "on": False, "reason": f"the embedding model 'fake-embed' is not served by {ai_fable.settings.ollama_url}"}
    assert missing["status"] == "model missing"
    assert missing["detail"] == (f"model 'qwen3:8b' is not served by {ai_fable.settings.ollama_url}; "
                                 "available: fake-embed")


async def test_a_server_too_busy_to_answer_the_probe_is_busy_not_down(
    ai_fable: Fable, fake: FakeLLM
) -> None:
    """A one-thread CPU server reading a long prompt does not answer a model list in 3 s: that is
    a busy server, not a missing one. Its tools stay offered and the UI shows no missing-model
    notice; a refused connection is still down."""
    status = ai_fable.assistant.status
    status.probe_timeout, fake.models_hold = 0.3, threading.Event()
    try:
        busy = await status.check()
    finally:
        fake.models_hold.set()
        status.probe_timeout = PROBE_TIMEOUT
    assert busy.status == "busy" and "did not answer the probe within 0.3 s" in (busy.detail or "")
    assert "llm" in ai_fable.availability, "its tools stay offered"
    assert (await status.check()).status == "ok"
