"""A newcomer finds any tool's file from its name in one hop: the module that registers a tool
says, in its package or file name, what it holds. Every tool's name or title shares a word with
the dotted path of its module (``search_projects`` in ``knowledge/project_search.py``, not in
``assistant/conversations.py``), allowing plurals and a few words that mean the same thing."""

from __future__ import annotations

import re

import pytest

from fable_core.capabilities import load_capabilities
from fable_core.tools.registry import REGISTRY, Tool

_STOP = frozenset(("a", "an", "the", "of", "to", "in", "on", "by", "with", "and", "or", "for", "from", "its",
                   "it", "my", "your", "you", "as", "at", "into", "is"))
SAME = {"person": "people", "chat": "conversation", "summarise": "summary", "summarize": "summary"}


def stem(word: str) -> str:
    word = word.lower()
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("ing") and len(word) > 5:
        word = word[:-3]
    elif word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        word = word[:-1]
    return SAME.get(word, word)


def words(text: str) -> set[str]:
    return {stem(w) for w in re.findall(r"[a-z]+", text.lower()) if w not in _STOP}


def says(module: str, name: str, title: str) -> bool:
    path = words(" ".join(module.split(".")[1:]).replace("_", " "))
    own = words(name.replace("_", " ")) | words(title)
    return any(a == b or (min(len(a), len(b)) > 3 and (a in b or b in a)) for a in own for b in path)


def _tools() -> list[Tool]:
    load_capabilities()
    return list(REGISTRY)


def test_every_tools_module_names_what_it_holds() -> None:
    strays = [f"{t.name} ({t.title}) in {t.module}" for t in _tools() if not says(t.module, t.name, t.title)]
    assert strays == []


def test_every_tool_is_registered_by_a_module_in_a_room_not_the_kernel() -> None:
    assert [t.name for t in _tools() if t.module.startswith(("fable_core.tools.", "fable_core.infra."))] == []


@pytest.mark.parametrize(("module", "name", "title", "expected"), [
    ("fable_core.knowledge.project_search", "search_projects", "Find projects", True),
    ("fable_core.assistant.conversations", "search_projects", "Find projects", False),
    ("fable_core.knowledge.entities.people_places", "save_person", "Save a person", True),
    ("fable_core.knowledge.notes", "list_tags", "List tags", False),
    ("fable_core.knowledge.trash.deleted_notes", "restore_note", "Restore a deleted note", True),
])
def test_the_rule_tells_a_home_from_a_stray(module: str, name: str, title: str, expected: bool) -> None:
    assert says(module, name, title) is expected
