"""Argument validation of every knowledge tool, driven from the registry: unknown argument
names and malformed row ids are refused with a typed error naming the field, writing nothing."""

from __future__ import annotations

import pytest

from fable_core.capabilities import load_capabilities
from fable_core.errors import InvalidInput
from fable_core.tools import REGISTRY

load_capabilities()

_KNOWLEDGE = [t.name for t in REGISTRY if t.fn.__module__.startswith("fable_core.knowledge.")]
_ROW_IDS = [(t.name, arg) for t in REGISTRY if t.name in _KNOWLEDGE
            for arg in t.input_schema.get("properties", {}) if arg.endswith("_id")]


def test_the_knowledge_tools_are_all_here() -> None:
    expected = {
        "create_note", "read_note", "update_note", "edit_note", "delete_note", "list_notes",
        "search_notes", "convert_note", "list_tags", "get_backlinks", "list_note_versions",
        "diff_note_versions", "restore_note_version", "list_tasks", "complete_task",
        "reschedule_task", "log_work", "list_work_logs", "delete_work_log", "work_report", "create_project",
        "update_project", "get_project", "list_projects", "delete_project", "create_milestone",
        "update_milestone", "list_milestones", "delete_milestone", "reorder_milestones",
    }
    assert expected <= set(_KNOWLEDGE)


def test_every_knowledge_tool_has_a_rest_route_and_paginates_its_lists() -> None:
    for name in _KNOWLEDGE:
        t = REGISTRY.get(name)
        assert t.route is not None, name
        if name.startswith("list_") or name in ("search_notes", "get_backlinks"):
            assert "cursor" in t.input_schema["properties"], name


async def test_unknown_argument_names_are_refused(call, snapshot) -> None:
    before = await snapshot()
    wrong = []
    for tool_name in _KNOWLEDGE:
        try:
            await call(tool_name, surprise_argument=1)
            wrong.append(f"{tool_name}: accepted")
        except InvalidInput as e:
            if "surprise_argument" not in {p["field"] for p in e.details["errors"]}:
                wrong.append(f"{tool_name}: {e.message}")
    assert wrong == []
    assert await snapshot() == before


@pytest.mark.parametrize("value", [0, -1, "seven", 2**31, 1.5])
async def test_malformed_row_ids_are_refused(call, value) -> None:
    wrong = []
    for tool_name, argument in _ROW_IDS:
        try:
            await call(tool_name, **{argument: value})
            wrong.append(f"{tool_name}({argument}={value!r}): accepted")
        except InvalidInput as e:
            if argument not in {p["field"] for p in e.details["errors"]}:
                wrong.append(f"{tool_name}({argument}={value!r}): {e.message}")
    assert wrong == []
