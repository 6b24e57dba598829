""""Did you mean": the names an unknown tool or argument is closest to, through the dispatcher
(the one place every surface's calls go through) and as the pure functions behind it."""

from __future__ import annotations

import pytest

from fable_core.errors import InvalidInput, UnknownTool
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.suggest import argument_hint, closest

TOOLS = ["create_note", "read_note", "update_note", "search_notes", "search_projects", "list_tasks",
         "list_tags", "log_work"]


@pytest.mark.parametrize(("wrong", "expected"), [
    ("create_notes", ["create_note"]),      # one clear match comes alone
    ("note_create", ["create_note"]),       # the same words reordered
    ("readnote", ["read_note"]),
    ("search", ["search_notes", "search_projects"]),  # a prefix of several
    ("list_task", ["list_tasks", "list_tags"]),
    ("launch_rockets", []),                 # nothing close: no guess
    ("x" * 5000, []),                       # no typo of ours, and no quadratic work on it
])
def test_closest_names(wrong: str, expected: list[str]) -> None:
    assert closest(wrong, TOOLS) == expected


def test_an_unknown_argument_names_the_close_one_or_else_the_arguments_there_are() -> None:
    schema = {"properties": {"title": {}, "body": {}, "notes": {"items": {"properties": {"title": {}, "tags": {}}}}}}
    assert argument_hint(schema, ["titel"]) == (["title"], " (did you mean `title`?)")
    assert argument_hint(schema, ["colour"]) == ([], " (expected one of: title, body, notes)")
    assert argument_hint(schema, ["notes", 3, "tag"]) == (["tags"], " (did you mean `tags`?)")
    assert argument_hint({}, ["titel"]) == ([], "")


async def test_an_unknown_tool_names_the_closest_tools(fable: Fable, alice: Caller) -> None:
    with pytest.raises(UnknownTool) as raised:
        await fable.call("create_notes", {"title": "x"}, alice)
    err = raised.value
    assert err.message == "no tool named 'create_notes'; did you mean `create_note`?"
    assert err.details == {"name": "create_notes", "did_you_mean": ["create_note"]}
    with pytest.raises(UnknownTool) as raised:
        await fable.call("make_coffee", {}, alice)
    assert raised.value.message == "no tool named 'make_coffee'" and raised.value.details == {"name": "make_coffee"}


async def test_a_read_only_caller_is_pointed_only_at_tools_it_may_use(fable: Fable, alice: Caller) -> None:
    reader = Caller(user_id=alice.user_id, username="alice", scope="read")
    with pytest.raises(UnknownTool) as raised:
        await fable.call("delete_notes", {}, reader)
    assert "delete_note" not in raised.value.details.get("did_you_mean", [])
    with pytest.raises(UnknownTool) as raised:
        await fable.call("delete_notes", {}, alice)
    assert raised.value.details["did_you_mean"] == ["delete_note"]


async def test_an_unknown_argument_says_did_you_mean_and_writes_nothing(fable: Fable, alice: Caller, call) -> None:
    with pytest.raises(InvalidInput) as raised:
        await fable.call("create_note", {"titel": "Groceries"}, alice)
    err = raised.value
    assert "titel: Extra inputs are not permitted (did you mean `title`?)" in err.message
    problems = {p["field"]: p for p in err.details["errors"]}
    assert problems["titel"]["did_you_mean"] == ["title"] and "did_you_mean" not in problems["title"]
    assert (await call("list_notes"))["items"] == []


async def test_an_unknown_argument_with_nothing_close_lists_the_arguments(fable: Fable, alice: Caller) -> None:
    with pytest.raises(InvalidInput) as raised:
        await fable.call("list_note_versions", {"note_id": 1, "colour": "red"}, alice)
    assert "colour: Extra inputs are not permitted (expected one of: note_id, limit, cursor)" in raised.value.message
    assert "did_you_mean" not in raised.value.details["errors"][0]


async def test_an_unknown_field_inside_a_list_argument_is_hinted_too(fable: Fable, alice: Caller, call) -> None:
    with pytest.raises(InvalidInput) as raised:
        await fable.call("import_notes", {"notes": [{"title": "A"}, {"title": "B", "tag": ["x"]}]}, alice)
    [problem] = raised.value.details["errors"]
    assert problem["field"] == "notes.1.tag" and problem["did_you_mean"] == ["tags"]
    assert (await call("list_notes"))["items"] == []
