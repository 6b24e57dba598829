"""The tool loop with what small local models do (issue 40, item 8, measured with Qwen2.5-0.5B):
the same call repeated after its result, invented tool names, a last round answered with
nothing, calls written with comments or an argument too many. The loop stops the repeat and has
the model answer from the result it has, names the offered tools to a wild name, never ends a
turn ``done`` with empty content, and reads calls leniently. Over the fake Ollama's real wire."""

from __future__ import annotations

import json

from sqlalchemy import select
from support.chat import new_conversation, text_of, turn
from support.fake_llm import FakeLLM, Reply

from fable_core.assistant.service import Assistant
from fable_core.assistant.toolprompt import parse_calls
from fable_core.db.models import Message, Note
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def stored(fable: Fable) -> tuple[str, str, str | None]:
    async with fable.db.transaction() as s:
        row = (await s.execute(select(Message.content, Message.status, Message.error)
                               .where(Message.role == "assistant"))).one()
    return row.content, row.status, row.error


async def test_a_call_repeated_after_its_result_is_not_run_again_and_the_model_answers_from_it(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    again = ("calculate", {"expression": "0.15 * 240"})
    fake.replies.extend([Reply("", [again]), Reply("", [again]), Reply("", [again])])
    fake.plain_replies.append(Reply("15% of 240 is 36."))
    events = await turn(assistant, alice, conv, "What's 15% of 240?")
    results = [e.data for e in events if e.event == "tool_result"]
    assert [r["name"] for r in results] == ["calculate"], "run once"
    bodies = fake.chat_bodies()
    assert bodies[1].get("tools") and not bodies[2].get("tools"), "after the repeat, words only"
    told = bodies[2]["messages"][-1]["content"]
    assert "already" in told and "36" in told
    assert text_of(events) == "15% of 240 is 36."


async def test_a_wild_tool_name_is_answered_with_the_tools_offered(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    fake.replies.extend([Reply("", [("result_of_call_dentist", {})]), Reply("Sorry.")])
    events = await turn(assistant, alice, conv, "Remind me to call the dentist tomorrow at 9")
    [refused] = [e.data for e in events if e.event == "tool_result"]
    message = refused["error"]["message"]
    offered = [t["function"]["name"] for t in fake.chat_bodies()[0]["tools"]]
    assert "the tools offered:" in message and all(name in message for name in offered[:5])


async def test_a_turn_never_ends_done_with_nothing_said(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    fake.replies.extend([Reply("", [("create_note", {"title": "Boiler service", "body": "annual check"})]),
                         Reply("")])  # the tool ran; the model then said nothing
    events = await turn(assistant, alice, conv, "note the boiler service")
    said = text_of(events)
    assert "Boiler service" in said and said.strip()
    content, status, _ = await stored(ai_fable)
    assert (content, status) == (said, "done")


async def test_a_turn_with_no_word_and_no_tool_ends_as_an_error_to_retry(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    fake.replies.append(Reply("   "))
    events = await turn(assistant, alice, conv, "hello?")
    assert events[-1].event == "error" and "answered nothing" in events[-1].data["message"]
    _, status, error = await stored(ai_fable)
    assert status == "error" and error is not None and "answered nothing" in error


async def test_an_argument_the_tool_does_not_take_is_dropped_with_a_word_to_the_model(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    fake.replies.extend([Reply("", [("create_note", {"title": "Shopping", "colour": "red"})]), Reply("Done.")])
    events = await turn(assistant, alice, conv, "start a shopping note")
    [result] = [e.data for e in events if e.event == "tool_result"]
    assert result["ok"] and "colour" in result["ignored"]
    async with ai_fable.db.transaction() as s:
        assert list((await s.execute(select(Note.title))).scalars()) == ["Shopping"]
    told = json.loads(fake.chat_bodies()[1]["messages"][-1]["content"])
    assert "colour" in told["ignored"] and told["result"]["title"] == "Shopping"


def test_a_call_written_with_comments_is_read() -> None:
    text = ('{"name": "create_note", // the tool\n'
            '  "arguments": {"title": "Read https://example.com // not a comment", /* why */ "status": "todo"}}')
    [call] = parse_calls(text)
    assert call.arguments == {"title": "Read https://example.com // not a comment", "status": "todo"}
