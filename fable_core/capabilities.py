"""Importing the domain modules registers their tools; surfaces call this once at start.

The core registers its built-in capabilities the same way any later module would: by
importing a module whose functions carry ``@tool``. Add new domains to ``_MODULES``.
"""

from __future__ import annotations

import importlib

__all__ = ["load_capabilities"]

_MODULES = (
    "fable_core.knowledge.notes",
    "fable_core.knowledge.importing",
    "fable_core.knowledge.versions",
    "fable_core.knowledge.tasks",
    "fable_core.knowledge.projects",
    "fable_core.knowledge.milestones",
    "fable_core.knowledge.worklogs",
    "fable_core.assistant.conversations",
    "fable_core.assistant.models",
    "fable_core.assistant.assist",
)


def load_capabilities() -> None:
    for module in _MODULES:
        importlib.import_module(module)
