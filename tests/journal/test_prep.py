"""The morning prep: the gather over the sections, the opener (a model's prose, or the sections'
own lines without one), stored once as the first message of the day's journal conversation."""

from __future__ import annotations

import json
import logging
import threading
from datetime import date, timedelta

import pytest
from sqlalchemy import select
from support.clock import today
from support.fake_llm import FakeLLM, Reply

from fable_core.daily.journal.morning import find_threads
from fable_core.daily.journal.prep import prepare
from fable_core.db.models import JournalDay, Message
from fable_core.errors import Conflict
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def a_morning(fable: Fable, alice: Caller) -> None:
    """Alice's world: a task due today, one overdue, one done, one due later, an active project."""
    this_day = today()  # when the test runs, not when its module was imported
    project = await fable.call("create_project", {"title": "Garden", "goal": "Grow tomatoes"}, alice)
    for title, status, due in [("Call the plumber", "todo", this_day),
                               ("Pay the rent", "todo", this_day - timedelta(days=2)),
                               ("Filed already", "done", this_day),
                               ("Next week's thing", "todo", this_day + timedelta(days=7))]:
        await fable.call("create_note", {"title": title, "status": status, "due_date": due.isoformat(),
                                         "project_id": project["id"]}, alice)


async def messages_of(fable: Fable, conversation_id: int) -> list[tuple[str, str]]:
    async with fable.db.reading() as session:
        rows = await session.execute(select(Message.role, Message.content).where(
            Message.conversation_id == conversation_id).order_by(Message.id))
    return [tuple(r) for r in rows]  # type: ignore[misc]


async def day_row(fable: Fable, conversation_id: int) -> JournalDay:
    async with fable.db.reading() as session:
        return (await session.execute(select(JournalDay).where(
            JournalDay.conversation_id == conversation_id))).scalar_one()


async def test_without_a_model_the_opener_is_each_sections_lines_stored_as_the_first_message(
        fable: Fable, alice: Caller) -> None:
    this_day = today()  # when the test runs, not when its module was imported
    await a_morning(fable, alice)
    day = await fable.call("prepare_journal", {}, alice)
    opener = day["opener"]
    assert day["prep"] == "done" and opener.startswith(f"**{this_day:%A} {this_day.day} {this_day:%B}**")
    assert opener.index("**Due today**\n- Call the plumber") < opener.index("**Overdue**\n- Pay the rent")
    assert "**Active projects**\n- Garden (3 open tasks)" in opener
    assert "Filed already" not in opener and "Next week" not in opener
    assert await messages_of(fable, day["conversation_id"]) == [("assistant", opener)]
    row = await day_row(fable, day["conversation_id"])
    assert (row.opener_source, row.sections) == ("structured", ["tasks", "projects"])
    assert (await fable.call("open_journal", {}, alice))["opener"] == opener


async def test_an_empty_day_still_gets_a_short_opener(fable: Fable, alice: Caller) -> None:
    day = await fable.call("prepare_journal", {}, alice)
    assert day["opener"].endswith("Nothing due, nothing left open: a blank page.")


async def test_preparing_again_replaces_the_opener_until_the_user_has_written(fable: Fable, alice: Caller) -> None:
    this_day = today()  # when the test runs, not when its module was imported
    first = await fable.call("prepare_journal", {}, alice)
    await fable.call("create_note", {"title": "Buy seeds", "status": "todo", "due_date": this_day.isoformat()}, alice)
    second = await fable.call("prepare_journal", {}, alice)
    assert "Buy seeds" in second["opener"] and "Buy seeds" not in first["opener"]
    assert await messages_of(fable, second["conversation_id"]) == [("assistant", second["opener"])]
    async with fable.db.transaction() as session:  # alice writes in her journal
        session.add(Message(conversation_id=second["conversation_id"], user_id=alice.user_id, role="user",
                            content="Slept well."))
    with pytest.raises(Conflict, match="already written in the journal"):
        await fable.call("prepare_journal", {}, alice)
    assert await messages_of(fable, second["conversation_id"]) == [
        ("assistant", second["opener"]), ("user", "Slept well.")]


async def test_the_scheduled_prep_prepares_a_day_once_and_skips_a_day_already_written_in(
        fable: Fable, alice: Caller, bob: Caller) -> None:
    this_day = today()  # when the test runs, not when its module was imported
    first = await prepare(fable, alice, this_day, manual=False)
    assert first is not None and first.prep == "done"
    assert await prepare(fable, alice, this_day, manual=False) is None
    assert len(await messages_of(fable, first.conversation_id)) == 1
    opened = await fable.call("open_journal", {}, bob)
    async with fable.db.transaction() as session:
        session.add(Message(conversation_id=opened["conversation_id"], user_id=bob.user_id, role="user",
                            content="Up early today."))
    assert await prepare(fable, bob, this_day, manual=False) is None
    assert (await day_row(fable, opened["conversation_id"])).prep_state == "skipped"
    assert await messages_of(fable, opened["conversation_id"]) == [("user", "Up early today.")]


async def test_a_failing_section_is_logged_and_left_out_and_a_new_one_takes_its_place(
        fable: Fable, alice: Caller, extra_section, caplog: pytest.LogCaptureFixture) -> None:
    async def broken(session, caller, day):
        await session.execute(select(1 / 0))  # the database refuses: a real failure inside the read

    async def errands(session, caller, day):
        return [{"title": "Post office", "at": "09:30", "day": day.day.isoformat()}]

    extra_section("broken_weather", 30, broken)
    extra_section("errands", 21, errands,
                  lambda data: "**Errands**\n" + "\n".join(f"- {e['at']} {e['title']}" for e in data))
    await a_morning(fable, alice)
    with caplog.at_level(logging.ERROR, logger="fable_core.daily.journal.prep"):
        day = await fable.call("prepare_journal", {}, alice)
    opener = day["opener"]
    assert opener.index("Due today") < opener.index("**Errands**\n- 09:30 Post") < opener.index("Active projects")
    assert "section 'broken_weather' failed" in caplog.text
    assert (await day_row(fable, day["conversation_id"])).sections == ["tasks", "errands", "projects"]


async def test_open_threads_come_from_recent_journal_days_by_rule(fable: Fable, alice: Caller) -> None:
    this_day = today()  # when the test runs, not when its module was imported
    yesterday = this_day - timedelta(days=1)
    yesterday = await fable.call("open_journal", {"day": (this_day - timedelta(days=1)).isoformat()}, alice)
    async with fable.db.transaction() as session:
        for role, content, status in [
            ("user", "Lovely walk. I'll call mum about Sunday. The weather was fine.", "done"),
            ("assistant", "Sounds good.", "done"),
            ("user", "Should I repaint the shed?", "done"),
            ("assistant", "", "error"),
            ("user", "Off to bed.", "done"),
            ("assistant", "Sleep well. Did you water the tomatoes?", "done"),
        ]:
            session.add(Message(conversation_id=yesterday["conversation_id"], user_id=alice.user_id, role=role,
                                content=content, status=status))
    day = await fable.call("prepare_journal", {}, alice)
    weekday = f"{this_day - timedelta(days=1):%A}"
    assert f"**Left open**\n- I'll call mum about Sunday. (you said, {weekday})\n" \
           f"- Should I repaint the shed? (you asked, {weekday})\n" \
           f"- Did you water the tomatoes? (left unanswered, {weekday})" in day["opener"]


def test_a_question_that_was_answered_is_not_left_open() -> None:
    day = date(2026, 12, 4)
    assert find_threads(day, [("user", "What time is it?", "done"), ("assistant", "Noon.", "done")]) == []
    assert find_threads(day, [("user", "Remind me to stretch", "done")]) == [
        {"day": "2026-12-04", "kind": "promise", "said": "Remind me to stretch"}]
    assert find_threads(day, [("user", "Tired. I\u2019ll rest tomorrow.", "done"), ("assistant", "Good.", "done")]) == [
        {"day": "2026-12-04", "kind": "promise", "said": "I\u2019ll rest tomorrow."}]


async def test_a_model_writes_the_opener_from_the_gathered_json_in_one_call(
        settled: Fable, llm: FakeLLM, alice: Caller) -> None:
    this_day = today()  # when the test runs, not when its module was imported
    await a_morning(settled, alice)
    llm.plain_replies.append(Reply("Morning! The plumber needs a call today, and the rent is overdue."))
    day = await settled.call("prepare_journal", {}, alice)
    assert day["opener"] == "Morning! The plumber needs a call today, and the rent is overdue."
    [body] = llm.chat_bodies()
    system, gathered = body["messages"]
    assert "alice's daily journal" in system["content"]
    assert f"{this_day:%A} {this_day.day} {this_day:%B %Y}" in system["content"]
    data = json.loads(gathered["content"])
    assert [t["title"] for t in data["tasks"]["due_today"]] == ["Call the plumber"]
    assert data["projects"][0] == {"id": data["projects"][0]["id"], "title": "Garden", "goal": "Grow tomatoes",
                                   "open_tasks": 3}
    assert (await day_row(settled, day["conversation_id"])).opener_source == "model"
    assert "profile" not in system["content"], "no profile, no profile block"


async def test_the_model_writing_the_opener_is_told_the_users_profile(
        settled: Fable, llm: FakeLLM, alice: Caller) -> None:
    await a_morning(settled, alice)
    await settled.call("update_profile", {"facts": ["I walk the dog, Bruno, before work"]}, alice)
    llm.plain_replies.append(Reply("Morning! Bruno first, then the plumber."))
    await settled.call("prepare_journal", {}, alice)
    system = llm.chat_bodies()[-1]["messages"][0]["content"]
    assert "(their profile)" in system and "I walk the dog, Bruno, before work" in system


async def test_a_model_that_fails_leaves_the_structured_opener(settled: Fable, llm: FakeLLM, alice: Caller) -> None:
    await a_morning(settled, alice)
    llm.models[:] = ["another-model"]  # the server no longer serves the chat model: the call fails
    day = await settled.call("prepare_journal", {}, alice)
    assert "**Due today**\n- Call the plumber" in day["opener"]
    assert (await day_row(settled, day["conversation_id"])).opener_source == "structured"


@pytest.mark.parametrize("answer", [
    "Morning! The plumber needs a call today; the renovation should stay under a million pounds.",  # invented
    "Morning! Pay the plumber £450 before 15 January.",                                               # invented
    '{"greeting": "Morning", "tasks": ["Call the plumber"]}',                                         # JSON
    "Your response should contain exactly 6 sentences. It",                                          # instructions
])
async def test_an_opener_with_what_the_day_does_not_hold_is_not_stored(
        settled: Fable, llm: FakeLLM, alice: Caller, answer: str) -> None:
    """SmolLM2 and Qwen 0.5B wrote openers with invented amounts and dates, JSON, and the
    instruction read back: such an opener falls back to the structured one."""
    await a_morning(settled, alice)
    llm.plain_replies.append(Reply(answer))
    day = await settled.call("prepare_journal", {}, alice)
    assert "**Due today**\n- Call the plumber" in day["opener"]
    assert (await day_row(settled, day["conversation_id"])).opener_source == "structured"


async def test_talking_in_the_journal_is_the_assistants_chat_told_it_is_that_days_journal(
        settled: Fable, llm: FakeLLM, alice: Caller) -> None:
    this_day = today()  # when the test runs, not when its module was imported
    day = await settled.call("prepare_journal", {}, alice)
    llm.replies.append(Reply("That sounds like a good start.", delay=0.01))
    started = await settled.call("send_message", {"conversation_id": day["conversation_id"],
                                                  "content": "I slept well and I'll go running."}, alice)
    events = [e async for e in settled.assistant.follow(alice, day["conversation_id"])]  # type: ignore[union-attr]
    assert events[-1].event == "done" and "".join(e.data.get("text", "") for e in events) == \
        "That sounds like a good start."
    resumed = [e async for e in settled.assistant.follow(alice, day["conversation_id"], events[2].id)]  # type: ignore[union-attr]
    assert [e.id for e in resumed] == [e.id for e in events[3:]]
    system = llm.chat_bodies()[-1]["messages"][0]["content"]
    assert f"alice's daily journal for {this_day:%A} {this_day.day} {this_day:%B %Y}" in system
    conversation = await settled.call("get_conversation", {"conversation_id": day["conversation_id"]}, alice)
    assert [m["role"] for m in conversation["messages"]] == ["assistant", "user", "assistant"]
    assert conversation["messages"][0]["content"] == day["opener"] and started["message_id"]
    assert conversation["title"].startswith("Journal ")


async def test_an_answer_in_the_journal_can_be_stopped_like_any_answer(
        settled: Fable, llm: FakeLLM, alice: Caller) -> None:
    day = await settled.call("open_journal", {}, alice)
    held = threading.Event()
    llm.replies.append(Reply("This answer never comes.", hold=held))
    await settled.call("send_message", {"conversation_id": day["conversation_id"], "content": "A story?"}, alice)
    assert (await settled.call("stop_answer", {"conversation_id": day["conversation_id"]}, alice)) == {"stopped": True}
    held.set()
    answer = await settled.call("follow_answer", {"conversation_id": day["conversation_id"]}, alice)
    assert answer["status"] == "stopped"
