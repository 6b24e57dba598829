"""Tool calls written as text: each shape models write is read as a call, prose and other JSON
are not, held-back text streams as soon as it cannot be a call, and a turn in ``prompt`` and
``auto`` mode runs such calls through the dispatcher (bad arguments: an error the model reads,
nothing written), never showing their text as the answer. Over the fake servers' real wire."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import select
from support.chat import new_conversation, text_of, turn
from support.fake_llm import FakeLLM, Reply

from fable_core.assistant.service import Assistant
from fable_core.assistant.toolpick import CORE, STABLE_TOKENS
from fable_core.assistant.toolprompt import Holdback, parse_calls, tool_mode
from fable_core.config import Settings, load_settings
from fable_core.db.models import Message, Note
from fable_core.errors import InvalidInput
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

CALL = {"name": "create_note", "arguments": {"title": "Call the dentist", "status": "todo"}}
ARGS = CALL["arguments"]


@pytest.mark.parametrize("text", [
    json.dumps(CALL),
    f"```json\n{json.dumps(CALL, indent=2)}\n```",
    f"```\n{json.dumps(CALL)}\n```\n",
    f"<tool_call>\n{json.dumps(CALL)}\n</tool_call>",
    json.dumps({"tool": "create_note", "args": ARGS}),
    json.dumps({"tool_name": "create_note", "parameters": ARGS}),
    json.dumps({"function": {"name": "create_note", "arguments": json.dumps(ARGS)}}),
    json.dumps({"type": "function", "function": {"name": "create_note", "arguments": ARGS}}),
    json.dumps([CALL]),
    json.dumps(CALL) + "\nI have created the note for you.",  # an imagined result is dropped
])
def test_each_shape_models_write_is_one_call(text: str) -> None:
    [call] = parse_calls(text)
    assert (call.name, call.arguments) == ("create_note", ARGS)


def test_several_calls_in_a_list_or_one_after_another() -> None:
    second = {"name": "list_tasks", "arguments": {}}
    for text in (json.dumps([CALL, second]), f"{json.dumps(CALL)}\n{json.dumps(second)}"):
        assert [c.name for c in parse_calls(text)] == ["create_note", "list_tasks"]


@pytest.mark.parametrize("text", [
    "You have three tasks due today.",
    "Here is what I found: " + json.dumps(CALL),          # prose first: an answer, not a call
    json.dumps({"name": "John", "age": 31}),                 # JSON, but not a call
    json.dumps({"name": "list_tasks"}),                      # no arguments and not a tool offered
    json.dumps([CALL, {"answer": 42}]),                      # one element is not a call
    f"```python\n{json.dumps(CALL)}\n```",                   # code, not a call
    "[[Kitchen]] has the measurements.",
    "{not json at all",
])
def test_prose_and_other_json_are_not_calls(text: str) -> None:
    assert parse_calls(text) == []


def test_a_known_tool_may_come_without_arguments_and_bad_arguments_reach_the_dispatcher() -> None:
    [call] = parse_calls(json.dumps({"name": "list_tasks"}), known={"list_tasks"})
    assert (call.name, call.arguments) == ("list_tasks", {})
    [bad] = parse_calls(json.dumps({"name": "create_note", "arguments": "{broken"}))
    assert bad.arguments == {"_invalid_json": "{broken"}  # refused by validation, like a native call's


def _stream(pieces: list[str]) -> tuple[list[str], Holdback]:
    holdback = Holdback()
    return [holdback.feed(p) for p in pieces], holdback


def test_prose_streams_at_once_and_a_possible_call_is_held() -> None:
    shown, holdback = _stream(["You have ", "two tasks.\n", '{"na', 'me": "x"}'])
    assert shown == ["You have ", "two tasks.\n", "", ""]
    assert holdback.held == '{"name": "x"}'


@pytest.mark.parametrize(("pieces", "released"), [
    (["[[Kit", "chen]] is tidy"], "[[Kit"),   # a wiki link: released at its second bracket
    (["```py", "thon\nx = 1"], "```pyt"),      # a code block, not a call
    (["<b>", "bold"], "<b"),                   # markup, not <tool_call>
    (["{ } empty"], "{ }"),
])
def test_held_text_is_released_as_soon_as_it_cannot_be_a_call(pieces: list[str], released: str) -> None:
    shown, holdback = _stream(pieces)
    assert "".join(shown).startswith(released) and holdback.held == ""
    assert "".join(shown) + holdback.finish() == "".join(pieces)


def test_tool_modes_per_model_and_refused_entries() -> None:
    settings = load_settings({"LLM_TOOL_MODE": "native", "LLM_TOOL_MODES": "qwen2.5:0.5b=prompt, smollm2=auto"})
    assert tool_mode(settings, "qwen2.5:0.5b") == "prompt"
    assert tool_mode(settings, "smollm2") == "auto"
    assert tool_mode(settings, "qwen3:8b") == "native"
    assert tool_mode(load_settings({}), "anything") == "auto"
    for bad in ("smollm2", "smollm2=sometimes", "=prompt"):
        with pytest.raises(InvalidInput, match="LLM_TOOL_MODES"):
            load_settings({"LLM_TOOL_MODES": bad})


# --- turns over the wire -------------------------------------------------------------------------


@pytest.fixture(scope="module")
async def prompt_fable(ai_settings: Settings, openai_url: str) -> AsyncIterator[Fable]:
    """A Fable whose model (on the fake OpenAI-compatible server, which serves it) is in ``prompt`` mode."""
    app = await Fable.open(ai_settings.model_copy(update={
        "llm_provider": "openai", "openai_base_url": openai_url, "openai_api_key": "test-key",
        "openai_model": "qwen3:8b", "llm_tool_modes": ["qwen3:8b=prompt"]}))
    yield app
    await app.close()


@pytest.fixture
async def prompt_assistant(prompt_fable: Fable, fake: FakeLLM) -> AsyncIterator[Assistant]:
    yield prompt_fable.assistant
    a: Assistant = prompt_fable.assistant
    for key in list(a.generations._buffers):
        await a.generations.wait(key)
    await a.generations.close()
    if a.worker is not None:
        await a.worker.idle()
    await prompt_fable.dispatcher.usage.flush()


async def notes(fable: Fable) -> list[Note]:
    async with fable.db.transaction() as s:
        return list((await s.execute(select(Note))).scalars())


async def test_prompt_mode_describes_tools_in_the_system_prompt_and_runs_a_written_call(
    prompt_fable: Fable, prompt_assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(prompt_fable, alice)
    fake.plain_replies.extend([Reply(f"```json\n{json.dumps(CALL)}\n```"), Reply("Added it to your tasks.")])
    events = await turn(prompt_assistant, alice, conv, "remind me to call the dentist tomorrow")

    [task] = await notes(prompt_fable)
    assert (task.title, task.status) == ("Call the dentist", "todo")
    assert text_of(events) == "Added it to your tasks."       # the call's text was never shown
    first, second = fake.chat_bodies()[:2]
    assert "tools" not in first and "tools" not in second
    system = first["messages"][0]["content"]
    assert 'reply with only a JSON object' in system and '{"name":"create_note","description"' in system
    assert second["messages"][-2] == {"role": "assistant", "content": f"```json\n{json.dumps(CALL)}\n```"}
    result = second["messages"][-1]
    assert result["role"] == "user" and result["content"].startswith("Result of create_note: ")
    assert json.loads(result["content"].removeprefix("Result of create_note: "))["result"]["id"] == task.id
    async with prompt_fable.db.transaction() as s:
        stored = (await s.execute(select(Message).where(Message.role == "assistant"))).scalar_one()
    assert stored.content == "Added it to your tasks." and stored.tool_events[0]["ok"]


async def test_every_turn_starts_with_the_same_prompt_and_what_is_found_for_a_message_goes_with_it(
    prompt_fable: Fable, prompt_assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    """A server's prompt cache reads the system prompt (with the core tools) once a conversation,
    so it must not change between turns; the tools picked for a message (a system message of
    their own) and the notes given with it go before that message. The stable part fits
    STABLE_TOKENS at 3.2 bytes a token (JSON's rate with Qwen's tokenizer; bench.smallmodel
    counts a real tokenizer's)."""
    hotel = await prompt_fable.call("create_note", {"title": "Hotel", "body": "Room 12, breakfast at 8."}, alice)
    conv = await new_conversation(prompt_fable, alice)
    fake.plain_replies.extend([Reply("Noted."), Reply("Call the dentist"), Reply("Logged.")])
    await turn(prompt_assistant, alice, conv, "remind me to call the dentist tomorrow")
    await turn(prompt_assistant, alice, conv, "log 2 hours on the report", note_ids=[hotel["id"]])

    first, titled, second = fake.chat_bodies()
    system = first["messages"][0]["content"]
    assert second["messages"][0]["content"] == system, "the system prompt is the same on every turn"
    assert titled["messages"][0]["content"] == system, "a title asked between turns starts as they do"
    assert titled["messages"][-1]["content"].endswith(
        "Give this conversation a short title (at most 6 words). Answer with the title only, no quotes, "
        "no punctuation at the end.")
    assert (await prompt_fable.call("get_conversation", {"conversation_id": conv}, alice))["title"] == \
        "Call the dentist"
    assert len(system.encode()) / 3.2 <= STABLE_TOKENS, len(system.encode())
    assert [json.loads(line)["name"] for line in system.split("Tools:\n")[1].splitlines()] == [*CORE, "find_tools"]
    assert second["messages"][1:3] == [{"role": "user", "content": "remind me to call the dentist tomorrow"},
                                       {"role": "assistant", "content": "Noted."}]
    tools, asked = second["messages"][-2:]
    assert tools["role"] == "system" and tools["content"].startswith("More tools, for this message:\n")
    assert '{"name":"log_work"' in tools["content"], tools["content"][:300]
    assert asked == {"role": "user", "content": f"Context for this message:\n\nAttached note [[Hotel]] "
                                                f"(id {hotel['id']}):\nRoom 12, breakfast at 8.\n\n---\n\n"
                                                "log 2 hours on the report"}
    assert "log_work" not in system and "Room 12" not in system


async def test_a_written_call_with_bad_arguments_is_refused_and_the_model_told(
    prompt_fable: Fable, prompt_assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(prompt_fable, alice)
    bad = {"tool": "create_note", "args": {"title": "Dentist", "status": "someday"}}
    fake.plain_replies.extend([Reply(json.dumps(bad)), Reply("Sorry, I could not add it.")])
    events = await turn(prompt_assistant, alice, conv, "remind me about the dentist")
    result = next(e.data for e in events if e.event == "tool_result")
    assert not result["ok"] and result["error"]["type"] == "invalid_input"
    assert await notes(prompt_fable) == []
    told = fake.chat_bodies()[1]["messages"][-1]["content"]
    assert told.startswith("Result of create_note: ") and "invalid_input" in told and "status" in told
    assert text_of(events) == "Sorry, I could not add it."


async def test_prose_around_no_call_streams_as_the_answer_in_prompt_mode(
    prompt_fable: Fable, prompt_assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(prompt_fable, alice)
    answer = 'Your notes:\n[[Kitchen]] and [[Garden]].\n{"name": "Sam", "age": 3} is not a call.'
    fake.plain_replies.append(Reply(answer))
    events = await turn(prompt_assistant, alice, conv, "what do I have")
    assert text_of(events) == answer
    assert not [e for e in events if e.event == "tool_call"]


async def test_auto_mode_sends_native_tools_and_also_runs_a_call_written_as_text(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    assert assistant.tool_mode == "auto"  # the default
    conv = await new_conversation(ai_fable, alice)
    fake.replies.extend([Reply(json.dumps([CALL])), Reply("Done.")])
    events = await turn(assistant, alice, conv, "remind me to call the dentist")
    [task] = await notes(ai_fable)
    assert task.title == "Call the dentist"
    assert text_of(events) == "Done."
    assert "tools" in fake.chat_bodies()[0]
    assert fake.chat_bodies()[1]["messages"][-1]["content"].startswith("Result of create_note: ")


async def test_native_mode_shows_json_text_as_text_and_runs_nothing(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    assistant.tool_mode = "native"
    try:
        fake.replies.append(Reply(json.dumps(CALL)))
        events = await turn(assistant, alice, conv, "remind me to call the dentist")
    finally:
        assistant.tool_mode = "auto"
    assert text_of(events) == json.dumps(CALL)
    assert await notes(ai_fable) == []
