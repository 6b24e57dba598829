"""Toolsets: the named families of tools (each tool's ``group``) and one client's choice of them.

MCP hosts cap tools (Cursor used only the first 40; Windsurf refuses a server past 50, later
100) and every described tool is prompt a model pays for on every turn. So a client is offered
the **default** set (:data:`DEFAULT`: what people do most) and the discovery tools
(:data:`DISCOVERY`), and reaches every other tool without reconfiguring anything: it lists the
toolsets, enables one for its session, or finds a tool by words (a tool found is callable from
then on). ``all`` offers every tool. A choice is made up front per API key, per OAuth
connection, per stdio config (``fable mcp --toolsets``) or for the instance
(``FABLE_MCP_TOOLSETS``), and changed while the client runs (:class:`ToolChoice`).

What a choice offers is only what the caller could run anyway: scope, admin and services still
decide (:meth:`Registry.for_agents`). A toolset is an offer, not a permission.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Annotated

from pydantic import Field, StringConstraints

from fable_core.errors import InvalidInput, NotOffered
from fable_core.tools.registry import Registry, Tool

__all__ = ["ALL", "DEFAULT", "DEFAULT_NAME", "DISCOVERY", "TOOLSETS", "ToolChoice", "Toolsets", "check_toolsets"]

# A stored choice, as tools take it: None is the server's default.
Toolsets = Annotated[list[Annotated[str, StringConstraints(min_length=1, max_length=64)]] | None,
                     Field(min_length=1, max_length=64)]

ALL = "all"
DEFAULT_NAME = "default"

# One line per toolset: what list_toolsets says of it (a test holds it to the registry's groups).
TOOLSETS: dict[str, str] = {
    "notes": "Notes: write, read, edit, search, tags, backlinks, the graph.",
    "tasks": "Tasks (notes with a status): the agenda, complete, reschedule.",
    "projects": "Projects, milestones, work logs and time reports.",
    "history": "Note versions, diffs and restores; the trash.",
    "calendar": "Calendar events (and the CalDAV sync).",
    "journal": "The journal: the day's page, moments, the morning note.",
    "people": "People and places you keep facts about.",
    "lists": "Named lists (shopping, packing...).",
    "sharing": "Share notes and projects; groups.",
    "notifications": "Your notifications.",
    "chat": "The in-app assistant's conversations (needs a model).",
    "writing": "Model help with a note: drafts, tags, quick capture (needs a model).",
    "models": "The model server's models (admins).",
    "research": "Web search and multi-step research (needs SearXNG).",
    "feeds": "RSS/Atom feeds and their items.",
    "images": "Images: search, cache, upload, read.",
    "weather": "Weather forecasts for your places.",
    "profile": "What the assistant knows about you.",
    "settings": "Your settings.",
    "calculator": "Exact arithmetic.",
    "data": "Import notes, Obsidian vaults and chat exports.",
    "toolsets": "List and enable toolsets, find a tool (always offered).",
    "account": "Your account, sessions and keys (signed-in sessions only).",
    "admin": "Running the instance (admins, signed-in sessions only).",
}

DISCOVERY: frozenset[str] = frozenset({"list_toolsets", "enable_toolset", "find_tools"})

# The default offer: what people do most with notes, tasks, projects, today's agenda and the
# journal's day (the seed's assistant prompts and Fable's usage rows; docs/mcp.md, "Toolsets").
# A new tool goes into its toolset, not here, unless it displaces one (tests/mcp/test_tool_offer.py
# holds the default to 40 tools and 30,000 bytes).
DEFAULT: frozenset[str] = frozenset({
    "create_note", "read_note", "update_note", "edit_note", "delete_note", "list_notes", "search_notes",
    "list_tags", "get_backlinks",
    "list_tasks", "complete_task", "reschedule_task",
    "create_project", "update_project", "get_project", "list_projects", "log_work",
    "list_events", "create_event", "update_event", "delete_event",
    "open_journal", "record_moment", "list_moments",
    "list_note_versions", "restore_note_version",
    "get_weather",
    *DISCOVERY,
})


def check_toolsets(registry: Registry, entries: Iterable[str], *, source: str = "toolsets") -> list[str]:
    """``entries`` as a clean choice (``all``, ``default``, toolsets, tool names; order kept,
    repeats dropped), or InvalidInput naming every unknown entry and what is known."""
    cleaned = list(dict.fromkeys(e.strip() for e in entries if e.strip()))
    groups = {t.group for t in registry}
    known = {ALL, DEFAULT_NAME, *groups, *(t.name for t in registry)}
    unknown = [e for e in cleaned if e not in known]
    if unknown:
        raise InvalidInput(f"{source}: unknown {', '.join(unknown)}; use all, default, a toolset "
                           f"({', '.join(sorted(groups))}) or a tool name", unknown=unknown)
    return cleaned


class ToolChoice:
    """The tools one client is offered: its entries (``all``, ``default``, toolsets, tool names),
    the toolsets it switched off, and the tools it found by name. ``on_change`` runs when what it
    offers changed (the MCP server tells the client to list its tools again)."""

    def __init__(self, entries: Iterable[str], on_change: Callable[[], None] | None = None) -> None:
        self.origin = tuple(entries)  # as made: a credential whose stored choice changed starts afresh
        self.entries = set(self.origin) or {DEFAULT_NAME}
        self.disabled: set[str] = set()
        self.found: dict[str, str] = {}  # tool name: its toolset
        self.on_change = on_change

    def offers(self, t: Tool) -> bool:
        if t.name in DISCOVERY or t.name in self.found:
            return True
        if t.group in self.disabled:
            return False
        return (ALL in self.entries or t.group in self.entries or t.name in self.entries
                or (DEFAULT_NAME in self.entries and t.name in DEFAULT))

    def require(self, t: Tool) -> None:
        """Refuse a call of a tool this choice does not offer, saying how to have it offered."""
        if not self.offers(t):
            raise NotOffered(f"{t.name} is in the toolset {t.group}, not offered in this session: call "
                             f"enable_toolset with toolset={t.group} (or find_tools), then call it",
                             tool=t.name, toolset=t.group)

    def enable(self, toolset: str) -> None:
        def on() -> None:
            self.entries.add(toolset)
            self.disabled.discard(toolset)
        self._change(on)

    def disable(self, toolset: str) -> None:
        def off() -> None:
            self.entries.discard(toolset)
            self.disabled.add(toolset)
            self.found = {n: g for n, g in self.found.items() if g != toolset}
        self._change(off)

    def add(self, tools: Iterable[Tool]) -> list[str]:
        """Offer these tools from now on (what find_tools found); the names newly offered."""
        new = [t for t in tools if not self.offers(t)]
        self._change(lambda: self.found.update({t.name: t.group for t in new}))
        return [t.name for t in new]

    def _change(self, change: Callable[[], object]) -> None:
        before = (set(self.entries), set(self.disabled), dict(self.found))
        change()
        if (self.entries, self.disabled, self.found) != before and self.on_change is not None:
            self.on_change()
