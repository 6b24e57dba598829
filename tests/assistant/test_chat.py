"""A chat turn end to end against the fake Ollama: tool calls through the dispatcher, events,
stored messages, stop, titles, memory, scope changes, and a provider that is down."""

from __future__ import annotations

import json

from sqlalchemy import select, update
from support.assistants import settle
from support.chat import new_conversation, text_of, turn
from support.fables import fable_with
from support.fake_llm import FakeLLM, Reply

from fable_core.assistant.service import Assistant
from fable_core.assistant.toolloop import llm_tools
from fable_core.config import Settings
from fable_core.db.models import AppLog, Conversation, Message, Note
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def rows(fable: Fable, stmt):
    async with fable.db.transaction() as s:
        return list((await s.execute(stmt)).scalars())


async def test_a_tool_call_creates_a_task_seen_in_the_database(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    fake.replies.extend([
        Reply("", [("create_note", {"title": "Call the dentist", "status": "todo", "due_date": "2026-12-10"})]),
        Reply("Added the task to call the dentist."),
    ])
    events = await turn(assistant, alice, conv, "Remind me to call the dentist on the 10th")

    [task] = await rows(ai_fable, select(Note).where(Note.user_id == alice.user_id))
    assert (task.title, task.status, str(task.due_date)) == ("Call the dentist", "todo", "2026-12-10")
    kinds = [e.event for e in events]
    assert kinds[0] == "context" and kinds[-1] == "done"
    assert kinds.index("tool_call") < kinds.index("tool_result") < kinds.index("token")
    result = next(e.data for e in events if e.event == "tool_result")
    assert result["ok"] and result["result"]["id"] == task.id
    [stored] = await rows(ai_fable, select(Message).where(Message.role == "assistant"))
    assert (stored.content, stored.status) == ("Added the task to call the dentist.", "done")
    assert stored.tool_events[0]["name"] == "create_note"
    # the second round showed the model the tool result
    second = fake.chat_bodies()[1]["messages"]
    assert second[-1]["role"] == "tool" and json.loads(second[-1]["content"])["result"]["id"] == task.id


async def test_every_assistant_tool_call_is_logged_with_surface_assistant(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    fake.replies.extend([
        Reply("", [("list_notes", {}), ("create_note", {"title": ""})]),  # the second is invalid
        Reply("ok"),
    ])
    events = await turn(assistant, alice, conv, "list my notes")
    results = [e.data for e in events if e.event == "tool_result"]
    assert [r["ok"] for r in results] == [True, False]
    assert results[1]["error"]["type"] == "invalid_input"
    await ai_fable.dispatcher.usage.flush()
    logs = await rows(ai_fable, select(AppLog).where(AppLog.action.in_(["list_notes", "create_note"])))
    assert sorted((log.action, log.surface) for log in logs) == [
        ("create_note", "assistant"), ("list_notes", "assistant")]


async def test_the_model_sees_the_registry_tools_the_caller_may_use(ai_fable: Fable, alice: Caller) -> None:
    tools = {t["function"]["name"]: t["function"] for t in llm_tools(ai_fable.registry, alice)}
    create = ai_fable.registry.get("create_note")
    # lean: the description's first paragraph, every property with its type, no bounds or defaults
    assert tools["create_note"]["description"] == " ".join(create.description.split("\n\n")[0].split())
    parameters = tools["create_note"]["parameters"]
    assert parameters["properties"].keys() == create.input_schema["properties"].keys()
    assert parameters["required"] == create.input_schema["required"] == ["title"]
    assert parameters["properties"]["title"] == {"type": "string"}  # the dispatcher checks its length
    assert parameters["properties"]["status"]["enum"] == ["todo", "in_progress", "done", "cancelled"]
    assert "list_models" not in tools and "pull_model" not in tools
    reader = Caller(user_id=alice.user_id, scope="read")
    read_tools = {t["function"]["name"] for t in llm_tools(ai_fable.registry, reader)}
    assert "create_note" not in read_tools and "search_notes" in read_tools
    workspace = Caller(user_id=alice.user_id, project_id=1)
    assert "set_rag_scope" not in {t["function"]["name"] for t in llm_tools(ai_fable.registry, workspace)}


async def test_a_read_scope_caller_cannot_write_through_the_model(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    reader = Caller(user_id=alice.user_id, username="alice", scope="read")
    fake.replies.extend([Reply("", [("create_note", {"title": "Sneaky"})]), Reply("no")])
    events = await turn(assistant, reader, conv, "make a note")
    result = next(e.data for e in events if e.event == "tool_result")
    assert result["error"]["type"] == "unknown_tool"   # never offered to a read-only caller
    assert await rows(ai_fable, select(Note)) == []


async def test_the_model_cannot_run_a_tool_it_was_not_offered(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    """An admin's chat: the model names model-management tools (never offered to it) and, in
    the last round, which must answer in words, a tool it was offered before. None runs."""
    from fable_core.assistant.toolloop import MAX_ROUNDS

    assert alice.is_admin
    conv = await new_conversation(ai_fable, alice)
    offered = {t["function"]["name"] for t in llm_tools(ai_fable.registry, alice)}
    assert not {"delete_model", "pull_model", "warm_model", "list_models"} & offered
    fake.replies.extend([
        Reply("", [("delete_model", {"name": "qwen3:8b"}), ("pull_model", {"name": "evil:latest"})]),
        *[Reply("", [("list_tags", {})]) for _ in range(MAX_ROUNDS - 1)],
        Reply("", [("create_note", {"title": "Smuggled in the last round"})]),
    ])
    events = await turn(assistant, alice, conv, "tidy up the models")
    results = [e.data for e in events if e.event == "tool_result"]
    assert [r["error"]["type"] for r in results[:2]] == ["unknown_tool", "unknown_tool"]
    assert fake.models == ["qwen3:8b", "nomic-embed-text", "fake-embed"]   # nothing deleted, nothing pulled
    assert all(r["name"] == "list_tags" for r in results[2:])
    assert await rows(ai_fable, select(Note)) == []


async def test_a_misnamed_tool_call_is_answered_with_the_offered_tools_it_is_close_to(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    """The model gets "did you mean" among the tools it was offered, never a hidden one's name."""
    conv = await new_conversation(ai_fable, alice)
    fake.replies.extend([
        Reply("", [("create_notes", {"title": "Typo"}), ("list_model", {})]),
        Reply("", [("create_note", {"title": "Typo"})]),
        Reply("done"),
    ])
    events = await turn(assistant, alice, conv, "note it")
    results = [e.data for e in events if e.event == "tool_result"]
    assert results[0]["error"]["details"] == {"name": "create_notes", "did_you_mean": ["create_note"]}
    assert "did you mean `create_note`?" in results[0]["error"]["message"]
    assert "list_models" not in str(results[1]["error"])   # model management is never offered
    assert results[2]["ok"] and [n.title for n in await rows(ai_fable, select(Note))] == ["Typo"]
    assert "did you mean `create_note`?" in fake.chat_bodies()[1]["messages"][-2]["content"]


async def test_set_rag_scope_changes_the_scope_and_done_says_so(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    fake.replies.extend([Reply("", [("set_rag_scope", {"all_notes": True})]), Reply("Now using all notes.")])
    events = await turn(assistant, alice, conv, "search all my notes from now on")
    assert events[-1].event == "done"
    assert events[-1].data["rag_scope"] == {"rag_project_id": -1, "label": "All notes"}
    [conversation] = await rows(ai_fable, select(Conversation))
    assert conversation.rag_project_id == -1
    fake.replies.append(Reply("Same scope."))
    again = await turn(assistant, alice, conv, "thanks")
    assert "rag_scope" not in again[-1].data


async def test_a_title_is_generated_after_the_first_exchange(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    fake.replies.append(Reply("Sourdough bread needs a starter."))  # the title's words are the conversation's
    fake.plain_replies.append(Reply("Baking sourdough bread"))
    await turn(assistant, alice, conv, "How do I bake sourdough?")
    [conversation] = await rows(ai_fable, select(Conversation))
    assert conversation.title == "Baking sourdough bread"
    fake.replies.append(Reply("Flour and water."))
    await turn(assistant, alice, conv, "What goes in the starter?")
    [conversation] = await rows(ai_fable, select(Conversation))
    assert conversation.title == "Baking sourdough bread", "not retitled at message 4"


async def test_a_models_long_title_is_cut_and_an_empty_one_falls_back_to_the_users_words(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    long = ('Title: "The user is asking how to bake a sourdough bread at home and which flour and '
            'starter they need for it, step by step, now"')
    assert len(long) == 129
    conv = await new_conversation(ai_fable, alice)
    fake.replies.append(Reply("Sourdough needs a starter."))
    fake.plain_replies.append(Reply(long))
    await turn(assistant, alice, conv, "How do I bake sourdough? Which flour and starter, step by step?")
    [conversation] = await rows(ai_fable, select(Conversation))
    assert conversation.title == "How do I bake sourdough? Which flour and", "words the conversation lacks: the user's"

    drawn = await new_conversation(ai_fable, alice)  # a title drawn from the conversation's words is kept
    fake.replies.append(Reply("Sourdough needs a starter."))
    fake.plain_replies.append(Reply("Baking sourdough"))
    await turn(assistant, alice, drawn, "How do I bake sourdough?")
    assert (await rows(ai_fable, select(Conversation).where(Conversation.id == drawn)))[0].title == "Baking sourdough"

    claimed = await new_conversation(ai_fable, alice)  # a model's claim the words do not make is no title
    fake.replies.append(Reply("I can add that as a task."))
    fake.plain_replies.append(Reply("Car Insurance Task Completed"))
    await turn(assistant, alice, claimed, "renew the car insurance")
    assert (await rows(ai_fable, select(Conversation).where(Conversation.id == claimed)))[0].title == (
        "renew the car insurance")

    other = await new_conversation(ai_fable, alice)
    fake.replies.append(Reply("Flour, water, salt."))
    fake.plain_replies.append(Reply('**""**\n'))
    await turn(assistant, alice, other, "What goes into a basic bread dough, and how long should it rise overnight?")
    conversation = (await rows(ai_fable, select(Conversation).where(Conversation.id == other)))[0]
    assert conversation.title == "What goes into a basic bread dough, and"


async def test_an_unusable_title_at_a_refresh_keeps_the_title(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await _chat_of(ai_fable, alice, 8)
    await ai_fable.call("rename_conversation", {"conversation_id": conv, "title": "Counting"}, alice)
    fake.replies.append(Reply("Nine, ten."))
    fake.plain_replies.append(Reply("Give this conversation a short title (at most 6 words)."))
    await turn(assistant, alice, conv, "and then?")
    assert any("short title" in b["messages"][-1]["content"] for b in fake.chat_bodies()), "a title was asked for"
    [conversation] = await rows(ai_fable, select(Conversation))
    assert conversation.title == "Counting"


async def _chat_of(fable: Fable, caller: Caller, count: int) -> int:
    """A conversation with ``count`` stored messages, "message number 0" onwards."""
    conv = await new_conversation(fable, caller)
    async with fable.db.transaction() as s:
        for i in range(count):
            s.add(Message(conversation_id=conv, user_id=caller.user_id, role="user" if i % 2 == 0 else "assistant",
                          content=f"message number {i}", status="done"))
    return conv


async def test_long_chats_are_summarised_after_the_answer_keeping_the_newest_eight(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await _chat_of(ai_fable, alice, 32)
    fake.plain_replies.append(Reply("The user counted messages."))
    fake.replies.extend([Reply("Yes."), Reply("Still here.")])
    await turn(assistant, alice, conv, "still there?")
    chat_request, summary_request = fake.chat_bodies()
    assert [m["content"] for m in chat_request["messages"][1:]] == [
        *(f"message number {i}" for i in range(32)), "still there?"], "the answer did not wait for a summary"
    transcript = summary_request["messages"][-1]["content"]
    assert "message number 0" in transcript and "message number 25" in transcript
    assert "message number 26" not in transcript and "still there?" not in transcript
    [conversation] = await rows(ai_fable, select(Conversation))
    assert conversation.summary == "The user counted messages."
    [covered] = await rows(ai_fable, select(Message.id).where(Message.content == "message number 25"))
    assert conversation.summary_message_id == covered

    await turn(assistant, alice, conv, "and now?")
    sent = fake.chat_bodies()[-1]["messages"]
    assert sent[1] == {"role": "system", "content": "Summary of the earlier conversation:\nThe user counted messages."}
    assert [m["content"] for m in sent[2:]] == [
        *(f"message number {i}" for i in range(26, 32)), "still there?", "Yes.", "and now?"]


async def test_a_chat_far_behind_its_summary_is_summarised_before_answering(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await _chat_of(ai_fable, alice, 62)
    fake.plain_replies.append(Reply("Sixty-two messages of counting."))
    fake.replies.append(Reply("Yes."))
    await turn(assistant, alice, conv, "still there?")
    summary_request, chat_request = fake.chat_bodies()
    transcript = summary_request["messages"][-1]["content"]
    assert "message number 53" in transcript and "message number 54" not in transcript
    sent = chat_request["messages"]
    assert sent[1]["content"] == "Summary of the earlier conversation:\nSixty-two messages of counting."
    assert [m["content"] for m in sent[2:]] == [*(f"message number {i}" for i in range(54, 62)), "still there?"]
    assert len(fake.chat_bodies()) == 2, "ten messages after the summary need no other"


async def test_a_summary_built_on_an_outdated_one_is_not_stored(
    ai_fable: Fable, fake: FakeLLM, alice: Caller
) -> None:
    from fable_core.assistant import memory

    conv = await _chat_of(ai_fable, alice, 12)
    async with ai_fable.db.transaction() as s:
        past = [memory.Past(*r) for r in (await s.execute(
            select(Message.id, Message.role, Message.content).where(Message.conversation_id == conv)
            .order_by(Message.id))).all()]
        stale = await s.get(Conversation, conv)
    async with ai_fable.db.transaction() as s:  # meanwhile, another summary landed
        await s.execute(update(Conversation).where(Conversation.id == conv)
                        .values(summary="Newer.", summary_message_id=past[5].id))
    fake.plain_replies.append(Reply("Older."))
    recent = await memory.summarise(ai_fable.db, ai_fable.llm, stale, past)
    assert [r.content for r in recent] == [f"message number {i}" for i in range(4, 12)]
    [conversation] = await rows(ai_fable, select(Conversation))
    assert (conversation.summary, conversation.summary_message_id) == ("Newer.", past[5].id)
    assert stale.summary is None, "the caller's copy is not updated either"


async def test_stop_keeps_the_partial_answer(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    answer = " ".join(f"word{i}" for i in range(200))
    fake.replies.append(Reply(answer, delay=0.01))
    await assistant.send(alice, conv, "talk a lot")
    seen = []
    async for event in assistant.follow(alice, conv):
        seen.append(event)
        if event.event == "token" and len(seen) == 5:
            assert assistant.stop(conv)
    await assistant.wait(conv)
    assert seen[-1].event == "done" and seen[-1].data["stopped"]
    [stored] = await rows(ai_fable, select(Message).where(Message.role == "assistant"))
    assert stored.status == "stopped"
    assert stored.content == text_of(seen) and answer.startswith(stored.content) and stored.content


async def test_a_second_message_while_answering_is_refused(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    import pytest

    from fable_core.errors import Conflict, InvalidInput

    conv = await new_conversation(ai_fable, alice)
    fake.replies.append(Reply("slow " * 20, delay=0.01))
    await assistant.send(alice, conv, "first")
    with pytest.raises(Conflict):
        await assistant.send(alice, conv, "second")
    assistant.stop(conv)
    await assistant.wait(conv)
    with pytest.raises(InvalidInput):
        await assistant.send(alice, conv, "   ")
    assert len(await rows(ai_fable, select(Message))) == 2, "refused messages wrote nothing"


async def test_other_peoples_conversations_do_not_exist(
    ai_fable: Fable, assistant: Assistant, alice: Caller, bob: Caller
) -> None:
    import pytest

    from fable_core.errors import NotFound

    conv = await new_conversation(ai_fable, alice)
    with pytest.raises(NotFound):
        await assistant.send(bob, conv, "hello")
    with pytest.raises(NotFound):
        await ai_fable.call("get_conversation", {"conversation_id": conv}, bob)
    assert (await ai_fable.call("list_conversations", {}, bob))["items"] == []


async def test_a_stranger_posting_to_a_conversation_neither_blocks_it_nor_learns_it_exists(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller, bob: Caller
) -> None:
    """bob guessing alice's conversation id must get NotFound whether or not it is answering,
    and must not hold the slot that turns alice's own next message away."""
    import pytest

    from fable_core.errors import Conflict, NotFound

    conv = await new_conversation(ai_fable, alice)
    fake.replies.append(Reply("slow " * 20, delay=0.01))
    await assistant.send(alice, conv, "first")
    with pytest.raises(NotFound):   # answering: still NotFound, not Conflict
        await assistant.send(bob, conv, "hello")
    with pytest.raises(Conflict):   # alice herself is told it is busy
        await assistant.send(alice, conv, "second")
    assistant.stop(conv)
    await assistant.wait(conv)
    with pytest.raises(NotFound):   # idle: bob's attempt leaves nothing reserved
        await assistant.send(bob, conv, "hello")
    fake.replies.append(Reply("ok"))
    await assistant.send(alice, conv, "third")
    await assistant.wait(conv)


async def test_urls_in_a_message_are_fetched_through_the_ssrf_guard(
    ai_settings: Settings, fake: FakeLLM, alice: Caller
) -> None:
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse
    from starlette.routing import Route
    from support.servers import serve_in_thread

    async def page(_):
        return HTMLResponse("<html><script>x()</script><body><h1>Release notes</h1>"
                            "<p>Version 2 &amp; more</p></body></html>")

    with serve_in_thread(Starlette(routes=[Route("/notes", page)])) as site:
        # FABLE_FETCH_ALLOW_HOSTS lets this one loopback site through; the metadata address stays refused
        async with fable_with(ai_settings, fable_fetch_allow_hosts=[site.removeprefix("http://")]) as app:
            assert app.assistant is not None
            conv = await new_conversation(app, alice)
            events = await turn(app.assistant, alice, conv, f"summarise {site}/notes and http://169.254.169.254/latest")
            await settle(app)
    urls = events[0].data["urls"]
    read = "# Release notes Version 2 & more"  # the page's readable text: its heading kept as a heading
    assert urls[0] == {"url": f"{site}/notes", "ok": True, "chars": len(read)}
    assert urls[1]["ok"] is False and "not public" in urls[1]["error"]
    asked = fake.chat_bodies()[0]["messages"][-1]["content"]
    assert f"Content of {site}/notes:\n{read}" in asked
    assert "x()" not in json.dumps(fake.chat_bodies()[0]["messages"])


async def test_the_same_turn_works_over_an_openai_compatible_server(
    ai_settings, openai_url: str, fake: FakeLLM, alice: Caller
) -> None:
    settings = ai_settings.model_copy(update={"llm_provider": "openai", "openai_base_url": openai_url,
                                              "openai_api_key": "test-key", "openai_model": "gpt-test"})
    fake.models.append("gpt-test")  # the server serves it
    app = await Fable.open(settings)
    try:
        assistant = app.assistant
        conv = await new_conversation(app, alice)
        fake.replies.extend([Reply("On it.", [("create_note", {"title": "Renew passport", "status": "todo"})]),
                             Reply("Done.")])
        events = await turn(assistant, alice, conv, "remind me to renew my passport")
        assert text_of(events) == "On it.Done."
        [task] = await rows(app, select(Note))
        assert (task.title, task.status) == ("Renew passport", "todo")
        assert fake.chat_bodies()[0]["model"] == "gpt-test"
        if assistant.worker is not None:
            await assistant.worker.idle(backfill=False)
    finally:
        await app.close()


async def test_the_users_assistant_name_and_default_model_shape_their_turns(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller, bob: Caller,
) -> None:
    fake.models.append("tiny:1b")
    await ai_fable.call("set_setting", {"key": "assistant_name", "value": "Ada"}, alice)
    await ai_fable.call("set_setting", {"key": "default_model", "value": "tiny:1b"}, alice)
    await turn(assistant, alice, await new_conversation(ai_fable, alice), "hello")
    await turn(assistant, bob, await new_conversation(ai_fable, bob), "hello")
    alices, bobs = [b for b in fake.chat_bodies() if b.get("tools")]
    assert alices["model"] == "tiny:1b" and bobs["model"] == "qwen3:8b"
    assert alices["messages"][0]["content"].startswith("You are Ada, Fable's assistant, helping alice")
    assert bobs["messages"][0]["content"].startswith("You are Fable's assistant, helping bob")
    titles = [b["model"] for b in fake.chat_bodies() if not b.get("tools")]
    assert titles == ["tiny:1b", "qwen3:8b"]  # each conversation's title, by its owner's model
