"""tools/list and tools/call: generated from the registry, errors as tool results."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest
from mcp import Client
from mcp_types import ListToolsResult
from support.mcp_clients import data
from support.snapshots import assert_json_matches

from fable_core.db.models import Project
from fable_core.runtime import Fable
from fable_core.tools import Context, Registry, tool
from fable_core.tools.caller import Caller
from fable_core.tools.registry import Tool
from fable_core.tools.results import Deleted
from fable_mcp.server import build_server

SNAPSHOT = Path(__file__).with_name("snapshots") / "tools_list.json"


def _as_received(result: ListToolsResult) -> list[dict]:
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in result.tools]


async def test_tools_list_snapshot(connect_fast, model_answering: None) -> None:
    """Every tool, as an admin sees them with a model answering."""
    async with connect_fast() as client:
        tools = _as_received(await client.list_tools())
    tools.sort(key=lambda t: t["name"])  # registry order varies with imports
    assert_json_matches(SNAPSHOT, tools, env_var="UPDATE_SNAPSHOTS",
                        command=".venv/bin/pytest tests/mcp/test_tools.py", what="the tools/list clients receive")


def _types(schema: object) -> list[str]:
    """Every type a schema names, at any depth."""
    if isinstance(schema, list):
        return [name for item in schema for name in _types(item)]
    if not isinstance(schema, dict):
        return []
    own = schema.get("type", [])
    return [*(own if isinstance(own, list) else [own]), *_types(list(schema.values()))]


def _hints(t: Tool) -> dict[str, bool]:
    """The annotations that differ from MCP's defaults (not read-only, destructive, not
    idempotent, open world): what a client needs, said once."""
    a = t.annotations
    if a.read_only:
        hints = {"readOnlyHint": True}
    else:
        hints = {"destructiveHint": False} if not a.destructive else {}
        hints |= {"idempotentHint": True} if a.idempotent else {}
    return hints | ({"openWorldHint": False} if not a.open_world else {})


async def test_every_offered_tool_is_listed_with_its_registry_metadata(connect, fable: Fable, alice: Caller) -> None:
    async with connect() as client:
        listed = {t["name"]: t for t in _as_received(await client.list_tools())}
    offered = fable.registry.for_agents(replace(alice, credential=connect.credential), fable.availability)
    assert sorted(listed) == sorted(t.name for t in offered)
    assert not any(t.needs for t in offered)  # no model here: nothing that needs one is offered
    for t in offered:
        got = listed[t.name]
        assert got["title"] == t.title and got["description"] == t.description
        assert got["inputSchema"] == t.input_schema and "outputSchema" not in got
        assert got["annotations"] == _hints(t)
        assert "properties" in got["inputSchema"] and "$ref" not in str(got["inputSchema"].get("properties"))
        assert "null" not in _types(got["inputSchema"]) and "None" not in str(got["inputSchema"])


async def test_a_tool_added_to_a_registry_appears_with_no_mcp_code(fable: Fable, alice: Caller) -> None:
    registry = Registry()

    @tool(group="test", title="Echo", scope="read", registry=registry)
    async def echo(ctx: Context, text: str) -> Deleted:
        """Echo back nothing but an id, for the test."""
        return Deleted(id=len(text))

    local = Fable(fable.settings, fable.db, registry=registry)
    async with Client(build_server(local, alice)) as client:
        tools = (await client.list_tools()).tools
        result = await client.call_tool("echo", {"text": "four"})
    assert [t.name for t in tools] == ["echo"] and tools[0].annotations.read_only_hint is True
    assert data(result) == {"id": 4, "deleted": True}


async def test_a_result_is_compact_json_text(connect) -> None:
    async with connect() as client:
        created = await client.call_tool("create_note", {"title": "Plan", "body": "See [[Ideas]]",
                                                         "tags": ["Work"]})
        assert not created.is_error
        note = data(created)
        read = await client.call_tool("read_note", {"note_id": note["id"]})
    assert note["title"] == "Plan" and note["tags"] == ["work"] and note["kind"] == "note"
    assert "due_date" not in note and "status" not in note  # nulls are left out
    assert data(read)["body"] == "See [[Ideas]]"
    assert '"body":"See [[Ideas]]"' in read.content[0].text and ": " not in read.content[0].text
    assert created.structured_content is None and read.structured_content is None


async def test_structured_mode_adds_output_schemas_and_structured_content(fable: Fable, alice: Caller) -> None:
    local = Fable(fable.settings.model_copy(update={"fable_mcp_structured": True}), fable.db)
    async with Client(build_server(local, alice)) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        created = await client.call_tool("create_note", {"title": "Structured"})  # the SDK validates it
    assert listed["create_note"].output_schema == fable.registry.get("create_note").output_schema
    assert created.structured_content is not None and created.structured_content["due_date"] is None
    assert "due_date" not in data(created)  # the text stays compact


async def test_duplicate_title_is_an_error_result_naming_the_note(connect, call) -> None:
    existing = await call("create_note", title="Quarterly plan")
    async with connect() as client:
        result = await client.call_tool("create_note", {"title": "quarterly plan"})
    assert result.is_error and result.structured_content is None
    text = result.content[0].text
    assert text.startswith("conflict: ")
    assert f"note {existing['id']} 'Quarterly plan'" in text and "update_note" in text


async def test_ambiguous_project_error_lists_the_candidates(connect_fast, fable: Fable, alice: Caller) -> None:
    async with fable.db.transaction() as session:
        session.add_all([Project(user_id=alice.user_id, title="Website redesign"),
                         Project(user_id=alice.user_id, title="Website hosting")])
    async with connect_fast() as client:
        result = await client.call_tool("create_note", {"title": "Fonts", "project": "website"})
        listed = await client.call_tool("list_notes", {})
    text = result.content[0].text
    assert result.is_error and text.startswith("invalid_input: ")
    assert "'Website redesign' (id 1)" in text and "'Website hosting' (id 2)" in text
    assert data(listed)["items"] == []


@pytest.mark.parametrize(("arguments", "expected"), [
    ({}, "title: Field required"),
    ({"title": ""}, "title: String should have at least 1 character"),
    ({"title": "Ok", "status": "someday"}, "status: Input should be"),
    ({"title": "Ok", "due_date": "next tuesday"}, "due_date: Input should be a valid date"),
    ({"title": "Ok", "colour": "red"}, "colour: Extra inputs are not permitted"),
])
async def test_bad_arguments_are_refused_and_write_nothing(connect_fast, arguments, expected) -> None:
    async with connect_fast() as client:
        result = await client.call_tool("create_note", arguments)
        listed = await client.call_tool("list_notes", {})
    assert result.is_error and result.content[0].text.startswith("invalid_input: invalid arguments for create_note")
    assert expected in result.content[0].text
    assert data(listed)["items"] == []


async def test_bad_arguments_over_every_transport(connect) -> None:
    async with connect() as client:
        result = await client.call_tool("read_note", {"note_id": "seven"})
    assert result.is_error and "note_id: Input should be a valid integer" in result.content[0].text


async def test_unknown_tool_is_an_error_result(connect_fast) -> None:
    async with connect_fast() as client:
        result = await client.call_tool("launch_rockets", {})
    assert result.is_error and result.content[0].text == "unknown_tool: no tool named 'launch_rockets'\n" \
        "details: {\"name\": \"launch_rockets\"}"


async def test_unknown_names_are_answered_with_the_close_ones(connect_fast) -> None:
    async with connect_fast() as client:
        tool = await client.call_tool("create_notes", {"title": "Plan"})
        argument = await client.call_tool("create_note", {"titel": "Plan"})
        listed = await client.call_tool("list_notes", {})
    assert tool.is_error and tool.content[0].text.startswith(
        "unknown_tool: no tool named 'create_notes'; did you mean `create_note`?")
    assert argument.is_error
    assert "titel: Extra inputs are not permitted (did you mean `title`?)" in argument.content[0].text
    assert data(listed)["items"] == []


async def test_recurrence_in_words_is_stored_as_its_rule_and_a_time_of_day_is_explained(connect_fast) -> None:
    async with connect_fast() as client:
        made = await client.call_tool("create_note", {"title": "Standup", "due_date": "2026-12-07",
                                                      "recurrence_rule": "every weekday"})
        timed = await client.call_tool("create_note", {"title": "Gym", "due_date": "2026-12-07",
                                                       "recurrence_rule": "every monday at 7am"})
    assert data(made)["recurrence_rule"] == "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR"
    assert timed.is_error and "tasks recur by date, not time of day: leave out 'at 7am': use 'every monday' " \
        "(FREQ=WEEKLY;BYDAY=MO)" in timed.content[0].text


async def test_work_report_over_mcp_is_compact(connect_fast, call) -> None:
    task = await call("create_note", title="Write report", status="todo")
    await call("log_work", note_id=task["id"], minutes=50, work_date="2026-11-03")
    async with connect_fast() as client:
        report = await client.call_tool("work_report", {"start": "2026-11-02", "end": "2026-11-08"})
        wrong = await client.call_tool("work_report", {"start": "2026-11-08", "end": "2026-11-02"})
    assert data(report)["projects"] == [
        {"title": "(no project)", "minutes": 50, "task_count": 1, "tasks": [{"id": task["id"], "title": "Write report",
                                                                             "minutes": 50}]}]
    assert "null" not in report.content[0].text
    assert wrong.is_error
    assert wrong.content[0].text.startswith("invalid_input: start 2026-11-08 is after end 2026-11-02")


async def test_note_versions_over_mcp_say_what_changed(connect_fast, call) -> None:
    note = await call("create_note", title="Plan", body="one", tags=["draft"])
    await call("update_note", note_id=note["id"], title="Plan B", add_tags=["work"], remove_tags=["draft"])
    async with connect_fast() as client:
        listed = await client.call_tool("list_note_versions", {"note_id": note["id"]})
    assert [v["changes"] for v in data(listed)["items"]] == [
        "title changed; tags +work -draft", "created"]


async def test_unexpected_exception_is_logged_and_reported_without_traceback(
    fable: Fable, alice: Caller, caplog: pytest.LogCaptureFixture
) -> None:
    registry = Registry()

    @tool(group="test", title="Break", scope="read", registry=registry)
    async def explode(ctx: Context) -> Deleted:
        """Fail the way a bug would."""
        raise RuntimeError("secret internal detail")

    local = Fable(fable.settings, fable.db, registry=registry)
    with caplog.at_level(logging.ERROR):
        async with Client(build_server(local, alice)) as client:
            result = await client.call_tool("explode", {})
    text = result.content[0].text
    assert result.is_error and text.startswith("internal_error: explode failed unexpectedly")
    assert "secret" not in text and "Traceback" not in text
    assert any("secret internal detail" in (r.exc_text or "") for r in caplog.records)
