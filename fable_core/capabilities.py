"""Fable's capabilities, in order: the modules whose import registers their tools (and their
background jobs), and the hook each capability runs when a Fable opens (and closes).

The core registers its built-in capabilities the way any later one would: a module whose
functions carry ``@tool``, listed here. The order of this list is the order of the registry
(tools/list, the REST routes, the LLM tool schema, the docs), whatever order modules happen to
be imported in. A capability that needs process-wide parts (a model provider, background
workers) names an ``install`` hook: an async function taking the opening :class:`Fable`, which
sets the runtime's typed attributes and returns an async closer (or None).
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fable_core.runtime import Fable

__all__ = ["CAPABILITIES", "Capability", "install_capabilities", "load_capabilities", "module_rank"]

Closer = Callable[[], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Capability:
    name: str
    modules: tuple[str, ...]  # whose import registers its tools
    install: str | None = None  # "module:function"
    jobs: tuple[str, ...] = ()  # whose import registers its background jobs (fable_core.jobs)


CAPABILITIES: tuple[Capability, ...] = (
    Capability("knowledge", (
        "fable_core.knowledge.notes",
        "fable_core.knowledge.listing",
        "fable_core.knowledge.search",
        "fable_core.knowledge.importing",
        "fable_core.knowledge.versions",
        "fable_core.knowledge.tasks",
        "fable_core.knowledge.projects",
        "fable_core.knowledge.milestones",
        "fable_core.knowledge.worklogs",
    ), install="fable_core.knowledge.analyser:install"),
    Capability("assistant", (
        "fable_core.assistant.conversations",
        "fable_core.assistant.turns",
        "fable_core.assistant.assist",
        "fable_core.assistant.models",
        "fable_core.assistant.chatmodels",
    ), install="fable_core.assistant.service:install"),
    Capability("preferences", ("fable_core.preferences.settings",)),
    Capability("sharing", (
        "fable_core.sharing.shares",
        "fable_core.sharing.groups",
    )),
    Capability("notifications", (
        "fable_core.notifications.inbox",
        "fable_core.notifications.push",
    ), jobs=(
        "fable_core.notifications.reminders",
        "fable_core.notifications.retention",
        "fable_core.notifications.sender",
    )),
    Capability("calendar", ("fable_core.calendar.events",)),  # which registers its morning-note section
    Capability("caldav", (
        "fable_core.caldav.accounts",
        "fable_core.caldav.sync",
    ), jobs=("fable_core.caldav.sync",)),
    Capability("weather", ("fable_core.weather.forecasts",), jobs=("fable_core.weather.morning",)),
    Capability("moments", ("fable_core.moments.moments",), jobs=("fable_core.moments.morning",)),
    Capability("profile", ("fable_core.profile.profile",), jobs=("fable_core.profile.learning",)),
    Capability("journal", (
        "fable_core.journal.days",
        "fable_core.journal.prep",
    ), install="fable_core.journal.schedule:install"),
    Capability("websearch", ("fable_core.websearch.web",), install="fable_core.websearch.searxng:install"),
    Capability("feeds", (
        "fable_core.feeds.subscriptions",
        "fable_core.feeds.items",
    ), jobs=("fable_core.feeds.refresh",)),
    Capability("images", ("fable_core.images.images",)),
    Capability("research", ("fable_core.research.runs",), install="fable_core.research.runner:install"),
    Capability("structured", ("fable_core.structured.entities", "fable_core.structured.lists")),
    Capability("calculator", ("fable_core.calculator.calculate",)),
    Capability("backup", ("fable_core.backup.backups",)),
    Capability("importers", ("fable_core.importers.vault", "fable_core.importers.chats")),
    Capability("logs", ("fable_core.logs.viewer",), jobs=("fable_core.logs.retention", "fable_core.rate_limits")),
    Capability("export", ("fable_core.export.export",)),
    Capability("drafts", ("fable_core.drafts.drafts", "fable_core.drafts.merging")),
    Capability("browse", ("fable_core.browse.titles", "fable_core.browse.tags", "fable_core.browse.graph")),
    Capability("oauth", ("fable_core.oauth.connections",), jobs=("fable_core.oauth.cleanup",)),
    Capability("trash", ("fable_core.trash.trash",), jobs=("fable_core.trash.trash",)),
    # last: its scheduler starts once every other capability is installed, and stops first
    Capability("jobs", (), install="fable_core.jobs:install"),
)

_RANK = {module: rank for rank, module in enumerate(m for c in CAPABILITIES for m in c.modules)}


def module_rank(module: str) -> int:
    """Where tools of ``module`` stand in the registry: after every listed module for others
    (tests register their own)."""
    return _RANK.get(module, len(_RANK))


def load_capabilities() -> None:
    for capability in CAPABILITIES:
        for module in (*capability.modules, *capability.jobs):
            importlib.import_module(module)


async def install_capabilities(fable: Fable) -> list[Closer]:
    """Run each capability's install hook in order; their closers, to run in reverse at close."""
    closers: list[Closer] = []
    for capability in CAPABILITIES:
        if capability.install is None:
            continue
        module, _, function = capability.install.partition(":")
        hook = getattr(importlib.import_module(module), function)
        closer = await hook(fable)
        if closer is not None:
            closers.append(closer)
    return closers
