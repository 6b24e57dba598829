"""The chat's core for the web UI: starting a conversation with its first message (none left
behind when it fails), regenerating and editing the last message, conversation search, and a
conversation's model."""

from __future__ import annotations

from dataclasses import replace

import httpx
import pytest
from mcp import Client
from support.chat import new_conversation, text_of, turn
from support.fake_llm import FakeLLM, Reply

from fable_core.assistant.service import Assistant
from fable_core.errors import Conflict, InvalidInput, NotFound, Unavailable
from fable_core.identity.accounts import create_api_key
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_mcp.server import build_server
from fable_web.app import create_app


async def _follow(assistant: Assistant, caller: Caller, conv: int) -> str:
    events = [e async for e in assistant.follow(caller, conv)]
    await assistant.wait(conv)
    return text_of(events)


async def _messages(fable: Fable, caller: Caller, conv: int) -> list[tuple[str, str]]:
    detail = await fable.call("get_conversation", {"conversation_id": conv}, caller)
    return [(m["role"], m["content"]) for m in detail["messages"]]


async def test_start_chat_makes_the_conversation_and_sends_its_first_message(
        ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller) -> None:
    project = await ai_fable.call("create_project", {"title": "Garden"}, alice)
    fake.replies.append(Reply("Plant tulips."))
    started = await ai_fable.call("start_chat", {"content": "what now?", "rag_project_id": project["id"],
                                                 "model": "qwen3:8b"}, alice)
    conv = started["conversation_id"]
    assert await _follow(assistant, alice, conv) == "Plant tulips."
    detail = await ai_fable.call("get_conversation", {"conversation_id": conv}, alice)
    assert (detail["rag_project_id"], detail["model"]) == (project["id"], "qwen3:8b")
    assert [b["model"] for b in fake.chat_bodies() if b.get("tools")] == ["qwen3:8b"]


async def test_a_failed_first_send_leaves_no_conversation(
        ai_fable: Fable, fable: Fable, assistant: Assistant, alice: Caller, bob: Caller) -> None:
    secret = await ai_fable.call("create_note", {"title": "Bob's secret"}, bob)
    with pytest.raises(NotFound):
        await ai_fable.call("start_chat", {"content": "hi", "note_ids": [secret["id"]]}, alice)
    with pytest.raises(NotFound):
        await ai_fable.call("start_chat", {"content": "hi", "rag_project_id": 999_999}, alice)
    with pytest.raises(Unavailable):  # no model at all (the shared Fable has none)
        await fable.call("start_chat", {"content": "hi"}, alice)
    page = await ai_fable.call("list_conversations", {}, alice)
    assert page["items"] == []


async def test_resend_regenerates_a_complete_answer_and_sends_an_edit_in_its_place(
        ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller, bob: Caller) -> None:
    conv = await new_conversation(ai_fable, alice)
    fake.replies.extend([Reply("One."), Reply("Two."), Reply("Three."), Reply("Four.")])
    await turn(assistant, alice, conv, "first")
    await turn(assistant, alice, conv, "second")
    await ai_fable.call("resend_message", {"conversation_id": conv}, alice)
    assert await _follow(assistant, alice, conv) == "Three."
    assert await _messages(ai_fable, alice, conv) == [
        ("user", "first"), ("assistant", "One."), ("user", "second"), ("assistant", "Three.")]
    await ai_fable.call("resend_message", {"conversation_id": conv, "content": "second, edited"}, alice)
    assert await _follow(assistant, alice, conv) == "Four."
    assert await _messages(ai_fable, alice, conv) == [
        ("user", "first"), ("assistant", "One."), ("user", "second, edited"), ("assistant", "Four.")]
    prompt = [b for b in fake.chat_bodies() if b.get("tools")][-1]["messages"]
    assert [m["content"] for m in prompt if m["role"] != "system"] == ["first", "One.", "second, edited"]


async def test_resend_refuses_bad_input_and_changes_nothing(
        ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller, bob: Caller) -> None:
    conv = await new_conversation(ai_fable, alice)
    with pytest.raises(Conflict, match="no message to send again"):
        await ai_fable.call("resend_message", {"conversation_id": conv}, alice)
    await turn(assistant, alice, conv, "hello")
    before = await _messages(ai_fable, alice, conv)
    with pytest.raises(InvalidInput):
        await ai_fable.call("resend_message", {"conversation_id": conv, "content": "   "}, alice)
    with pytest.raises(NotFound):
        await ai_fable.call("resend_message", {"conversation_id": conv}, bob)
    assert await _messages(ai_fable, alice, conv) == before


async def test_tool_events_say_where_in_the_text_they_happened(
        ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller) -> None:
    conv = await new_conversation(ai_fable, alice)
    fake.replies.extend([Reply("Let me look. ", tool_calls=[("list_projects", {})]), Reply("None yet.")])
    await turn(assistant, alice, conv, "projects?")
    detail = await ai_fable.call("get_conversation", {"conversation_id": conv}, alice)
    answer = detail["messages"][-1]
    assert answer["content"] == "Let me look. None yet."
    assert [(e["name"], e["at"]) for e in answer["tool_events"]] == [("list_projects", len("Let me look. "))]


async def test_conversations_are_found_by_title_or_message_words(
        ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller, bob: Caller) -> None:
    tulips = await new_conversation(ai_fable, alice, title="Garden plans")
    taxes = await new_conversation(ai_fable, alice, title="Money")
    await turn(assistant, alice, taxes, "when are the taxes_due? 100%")
    await new_conversation(ai_fable, bob, title="Garden of bob")

    async def found(query: str) -> list[int]:
        return [c["id"] for c in (await ai_fable.call("list_conversations", {"query": query}, alice))["items"]]

    assert await found("garden") == [tulips]
    assert await found("TAXES_due") == [taxes]
    assert await found("100%") == [taxes]
    assert await found("taxes garden") == []
    assert await found("_") == [taxes]  # a literal underscore, not any character


async def test_a_conversation_answers_with_its_chosen_model(
        ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller, bob: Caller) -> None:
    models = await ai_fable.call("list_chat_models", {}, alice)
    assert models["default"] in models["items"] and len(models["items"]) >= 2
    other = next(m for m in models["items"] if m != models["default"])
    conv = await new_conversation(ai_fable, alice)
    assert await ai_fable.call("set_conversation_model", {"conversation_id": conv, "model": other}, alice) == {
        "conversation_id": conv, "model": other}
    await turn(assistant, alice, conv, "hi")
    assert [b["model"] for b in fake.chat_bodies() if b.get("tools")] == [other]
    with pytest.raises(NotFound):
        await ai_fable.call("set_conversation_model", {"conversation_id": conv, "model": "x"}, bob)
    with pytest.raises(InvalidInput):
        await ai_fable.call("set_conversation_model", {"conversation_id": conv, "model": "bad model!"}, alice)
    await ai_fable.call("set_conversation_model", {"conversation_id": conv}, alice)
    assert (await ai_fable.call("get_conversation", {"conversation_id": conv}, alice))["model"] is None


async def test_bad_chat_input_is_refused_on_rest_and_mcp_and_writes_nothing(
        ai_fable: Fable, assistant: Assistant, alice: Caller) -> None:
    conv = await new_conversation(ai_fable, alice)
    key = await _key(ai_fable, alice)
    transport = httpx.ASGITransport(create_app(ai_fable))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost",
                                 headers={"Authorization": f"Bearer {key}"}) as http:
        for body in ({}, {"content": ""}, {"content": "hi", "rag_project_id": 0}, {"content": "hi", "model": "a b"}):
            response = await http.post("/api/chat/start", json=body)
            assert response.status_code == 422, (body, response.text)
        response = await http.post(f"/api/chat/conversations/{conv}/resend", json={"content": ""})
        assert response.status_code == 422
        assert (await http.get("/api/chat/conversations", params={"query": ""})).status_code == 422
    async with Client(build_server(ai_fable, replace(alice, surface="mcp"))) as client:
        result = await client.call_tool("start_chat", {"content": ""})
    assert result.is_error
    assert [c["id"] for c in (await ai_fable.call("list_conversations", {}, alice))["items"]] == [conv]


async def _key(fable: Fable, caller: Caller) -> str:
    async with fable.db.transaction() as s:
        _, key = await create_api_key(s, caller.user_id, "test")
    return key
