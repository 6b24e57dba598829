"""Which tools a chat turn describes to the model: the budget, the picks for everyday messages,
find_tools, and embeddings, against the registry as it is (every capability) and the fake
model servers."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select
from support.chat import new_conversation, turn
from support.fake_llm import FakeLLM, Reply

from fable_core.assistant.embeddings import Embedder
from fable_core.assistant.service import Assistant
from fable_core.assistant.toolloop import llm_tools
from fable_core.assistant.toolpick import CORE, ToolPicker
from fable_core.db.models import TaskLog
from fable_core.runtime import Fable
from fable_core.tools.availability import Availability
from fable_core.tools.caller import Caller

TOKEN_BUDGET = 2_500  # tokens of tool schema per turn, counted as bytes of the tool list JSON / 4
ADMIN = Caller(user_id=1, username="root", role="admin")
EVERYTHING = Availability({"llm"})  # every optional service up: every tool that exists is a candidate
EVERYDAY = {
    "remind me to call the dentist tomorrow": "create_note",
    "what did I write about the kitchen": "search_notes",
    "log 2 hours on the report": "log_work",
    "how many hours did I work on project X": "list_work_logs",
    "show me the old versions of my shopping list": "list_note_versions",
    "add a milestone to the website project": "create_milestone",
    "rewrite this note to be shorter": "assist_note",
    "which tags do I use most": "list_tags",
}


def tokens(schemas: list[dict]) -> int:
    return len(json.dumps(schemas, ensure_ascii=False, separators=(",", ":")).encode()) // 4


def offered(picker: ToolPicker, message: str, caller: Caller = ADMIN) -> list[str]:
    return [s["function"]["name"] for s in picker.offer(caller, message).schemas()]


EVERY_WORD = " ".join(f"{n} {n}s" for n in CORE) + (
    " and create update delete list log work milestone project version draft tag conversation import")


@pytest.mark.parametrize("message", [*EVERYDAY, "hello", EVERY_WORD])
def test_a_turn_describes_at_most_the_budget_of_tool_schema(fable: Fable, message: str) -> None:
    picker = ToolPicker(fable.registry, EVERYTHING)
    everything = llm_tools(fable.registry, ADMIN, EVERYTHING)
    assert tokens(everything) > 2 * TOKEN_BUDGET, "the whole list would not fit: that is why turns pick"
    schemas = picker.offer(ADMIN, message).schemas()
    assert tokens(schemas) <= TOKEN_BUDGET, [s["function"]["name"] for s in schemas]


@pytest.mark.parametrize(("message", "tool"), EVERYDAY.items())
def test_everyday_messages_are_offered_the_tool_they_need(fable: Fable, message: str, tool: str) -> None:
    names = offered(ToolPicker(fable.registry, EVERYTHING), message)
    assert tool in names, names
    assert names[:len(CORE) + 1] == [*CORE, "find_tools"], "the core and find_tools first, always the same"


def test_a_plain_greeting_gets_the_core_and_find_tools_only(fable: Fable) -> None:
    assert offered(ToolPicker(fable.registry, EVERYTHING), "hello there!") == [*CORE, "find_tools"]


def test_picking_never_offers_what_the_caller_may_not_run(fable: Fable) -> None:
    picker = ToolPicker(fable.registry, Availability())  # no model answering
    reader = Caller(user_id=1, scope="read")
    names = offered(picker, "delete the note and pull the model llama, then rewrite it shorter", reader)
    assert not {"delete_note", "pull_model", "delete_model", "assist_note", "create_note"} & set(names), names
    assert "delete_model" not in offered(ToolPicker(fable.registry, EVERYTHING), "delete the model qwen")
    assert "set_rag_scope" not in offered(ToolPicker(fable.registry, EVERYTHING), "set the rag scope to all notes",
                                          Caller(user_id=1, project_id=3))


async def test_embeddings_pick_tools_the_words_do_not_name(ai_fable: Fable, assistant: Assistant) -> None:
    """The message shares no word with the milestone tools; its vector (here: from a text that
    does, through the fake embedding model) is what finds them."""
    embedder = Embedder(ai_fable.llm, "fake-embed")
    picker = ToolPicker(ai_fable.registry, EVERYTHING, embedder)
    vector = await embedder.embed_query("milestone milestones of a project")
    assert "create_milestone" not in offered(picker, "zzz qqq")
    picker.offer(ADMIN, "zzz qqq", vector)  # the first use embeds the tools in the background
    await picker._embedding  # the test waits for what a turn never waits for
    names = [t.name for t in picker.offer(ADMIN, "zzz qqq", vector).described]
    assert {"list_milestones", "create_milestone"} & set(names), names


async def test_the_model_is_sent_the_picked_tools_and_finds_more_with_find_tools(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    task = await ai_fable.call("create_note", {"title": "Report", "status": "todo"}, alice)
    conv = await new_conversation(ai_fable, alice)
    fake.replies.extend([
        Reply("", [("find_tools", {"query": "record time spent on a task"})]),
        Reply("", [("log_work", {"note_id": task["id"], "minutes": 120})]),
        Reply("Logged two hours."),
    ])
    # The tools' vectors are made in the background at a session's first turn: whether an earlier
    # test's turn made them decides what "hello" picks by meaning. Made here, before the turn, the
    # offer is the same in any order (it was not: this test failed after tests/assistant/test_generation.py).
    assistant.tools._start_embedding()
    if assistant.tools._embedding is not None:
        await assistant.tools._embedding
    events = await turn(assistant, alice, conv, "hello")
    first, second, _ = fake.chat_bodies()[:3]
    names = [t["function"]["name"] for t in first["tools"]]
    # the core and find_tools; by meaning perhaps a few more (the fake model's hashed words
    # collide), but not the tool the model then has to find
    assert names[:len(CORE) + 1] == [*CORE, "find_tools"] and "log_work" not in names, names
    assert tokens(first["tools"]) <= TOKEN_BUDGET
    found = next(e.data for e in events if e.event == "tool_result")
    assert found["ok"] and "log_work" in [t["name"] for t in found["result"]["tools"]]
    assert "log_work" in [t["function"]["name"] for t in second["tools"]]
    async with ai_fable.db.transaction() as s:
        [log] = (await s.execute(select(TaskLog))).scalars().all()
    assert (log.note_id, log.minutes) == (task["id"], 120)


async def test_find_tools_with_bad_arguments_is_an_error_the_model_reads(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    fake.replies.extend([Reply("", [("find_tools", {"what": "x"})]), Reply("Sorry.")])
    events = await turn(assistant, alice, conv, "hello")
    result = next(e.data for e in events if e.event == "tool_result")
    assert result["error"]["type"] == "invalid_input"
    assert fake.chat_bodies()[1]["messages"][-1]["role"] == "tool"
    assert "invalid_input" in fake.chat_bodies()[1]["messages"][-1]["content"]


async def test_a_tool_not_described_this_turn_still_runs_when_the_caller_may_use_it(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    """Picking saves prompt; it is not a permission. An eligible tool the model names runs (the
    dispatcher validates it); a tool never eligible is refused (test_chat)."""
    conv = await new_conversation(ai_fable, alice)
    fake.replies.extend([Reply("", [("create_project", {"title": "Garden"})]), Reply("Made it.")])
    events = await turn(assistant, alice, conv, "hello")
    assert "create_project" not in [t["function"]["name"] for t in fake.chat_bodies()[0]["tools"]]
    result = next(e.data for e in events if e.event == "tool_result")
    assert result["ok"], result
    projects = (await ai_fable.call("list_projects", {}, alice))["items"]
    assert [p["title"] for p in projects] == ["Garden"]
