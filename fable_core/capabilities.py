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
from dataclasses import dataclass

from fable_core.tools.registry import REGISTRY
from fable_core.tools.runtime import Closer, Runtime

__all__ = ["CAPABILITIES", "Capability", "install_capabilities", "load_capabilities", "module_rank"]


@dataclass(frozen=True, slots=True)
class Capability:
    name: str
    modules: tuple[str, ...]  # whose import registers its tools
    install: str | None = None  # "module:function"
    jobs: tuple[str, ...] = ()  # whose import registers its background jobs (fable_core.tools.jobs)


CAPABILITIES: tuple[Capability, ...] = (
    Capability("knowledge", (
        "fable_core.knowledge.notes",
        "fable_core.knowledge.tags",
        "fable_core.knowledge.backlinks",
        "fable_core.knowledge.listing",
        "fable_core.knowledge.search",
        "fable_core.knowledge.importing",
        "fable_core.knowledge.versions",
        "fable_core.knowledge.tasks",
        "fable_core.knowledge.projects",
        "fable_core.knowledge.project_search",
        "fable_core.knowledge.milestones",
        "fable_core.knowledge.worklogs",
    ), install="fable_core.knowledge.analyser:install"),
    Capability("assistant", (
        "fable_core.assistant.conversations",
        "fable_core.assistant.rag_scope",
        "fable_core.assistant.chat_messages",
        "fable_core.assistant.note_drafts",
        "fable_core.assistant.tag_suggestions",
        "fable_core.assistant.capture",
        "fable_core.assistant.project_summaries",
        "fable_core.assistant.models",
        "fable_core.assistant.chat_models",
    ), install="fable_core.assistant.service:install", jobs=("fable_core.assistant.sweeps",)),
    Capability("preferences", ("fable_core.people.preferences.settings",)),
    Capability("sharing", (
        "fable_core.people.sharing.shares",
        "fable_core.people.sharing.groups",
    )),
    Capability("notifications", (
        "fable_core.people.notifications.inbox",
        "fable_core.people.notifications.push",
    ), jobs=(
        "fable_core.people.notifications.reminders",
        "fable_core.people.notifications.retention",
        "fable_core.people.notifications.sender",
    )),
    Capability("calendar", ("fable_core.daily.calendar.events",)),  # which registers its morning-note section
    Capability("caldav", (
        "fable_core.daily.caldav.accounts",
        "fable_core.daily.caldav.sync",
        "fable_core.daily.caldav.event_versions",
    ), jobs=("fable_core.daily.caldav.sync",)),
    Capability("weather", (
        "fable_core.daily.weather.forecasts",
        "fable_core.daily.weather.places",
    ), jobs=("fable_core.daily.weather.morning",)),
    Capability("moments", ("fable_core.daily.moments.moments",), jobs=("fable_core.daily.moments.morning",)),
    Capability("profile", (
        "fable_core.people.profile.profile",
        "fable_core.people.profile.observations",
    ), jobs=("fable_core.assistant.profile_learning",)),
    Capability("journal", (
        "fable_core.daily.journal.days",
        "fable_core.daily.journal.prep",
    ), jobs=("fable_core.daily.journal.schedule",)),
    Capability("websearch", ("fable_core.outside.websearch.web",),
               install="fable_core.outside.websearch.searxng:install"),
    Capability("feeds", (
        "fable_core.outside.feeds.subscriptions",
        "fable_core.outside.feeds.items",
    ), jobs=("fable_core.outside.feeds.refresh",)),
    Capability("images", ("fable_core.outside.images.images",)),
    Capability("research", ("fable_core.outside.research.runs",), install="fable_core.outside.research.runner:install",
               jobs=("fable_core.outside.research.runner",)),
    Capability("structured", ("fable_core.knowledge.entities.people_places", "fable_core.knowledge.entities.lists")),
    Capability("calculator", ("fable_core.assistant.calculator.calculate",)),
    Capability("backup", ("fable_core.data.backup.backups",)),
    Capability("importers", ("fable_core.data.importers.vault", "fable_core.data.importers.chats")),
    Capability("logs", ("fable_core.admin.logs.viewer", "fable_core.admin.logs.tool_usage"),
               jobs=("fable_core.admin.logs.retention",)),
    Capability("export", ("fable_core.data.export.export",)),
    Capability("drafts", ("fable_core.knowledge.drafts.drafts", "fable_core.knowledge.drafts.merging")),
    Capability("browse", (
        "fable_core.knowledge.browse.titles",
        "fable_core.knowledge.browse.tags",
        "fable_core.knowledge.browse.graph",
        "fable_core.knowledge.browse.links",
    )),
    Capability("oauth", ("fable_core.identity.oauth.connections",), jobs=("fable_core.identity.oauth.cleanup",)),
    Capability("account", (  # the signed-in person's own account, sessions and keys
        "fable_core.identity.me",
        "fable_core.identity.password_change",
        "fable_core.identity.email_change",
        "fable_core.identity.sessions",
        "fable_core.identity.keys",
    )),
    Capability("administration", (  # accounts, invitations, the instance's settings and mail
        "fable_core.identity.user_admin",
        "fable_core.identity.invitation_admin",
        "fable_core.admin.instance_settings",
        "fable_core.admin.registration",
        "fable_core.admin.mail",
    ), install="fable_core.admin.mail_probe:install"),
    Capability("trash", ("fable_core.knowledge.trash.deleted_notes",),
               jobs=("fable_core.knowledge.trash.deleted_notes",)),
    Capability("toolsets", ("fable_core.toolsets.discovery",)),  # listing, enabling and finding tools (MCP)
    # last: its scheduler starts once every other capability is installed, and stops first
    Capability("jobs", (), install="fable_core.tools.jobs:install"),
)

_RANK = {module: rank for rank, module in enumerate(m for c in CAPABILITIES for m in c.modules)}


def module_rank(module: str) -> int:
    """Where tools of ``module`` stand in the registry: after every listed module for others
    (tests register their own)."""
    return _RANK.get(module, len(_RANK))


REGISTRY.rank_modules(module_rank)


def load_capabilities() -> None:
    for capability in CAPABILITIES:
        for module in (*capability.modules, *capability.jobs):
            importlib.import_module(module)
    REGISTRY.check()  # what one tool cannot check alone (the tools a followed_by names)


async def install_capabilities(fable: Runtime) -> list[Closer]:
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
