"""Which tools a client is offered: what the caller can use, within a byte budget, narrowed by
a profile, and announced again (``notifications/tools/list_changed``) when the model comes or goes."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.subscriptions import ToolsListChanged

from fable_core.capabilities import CAPABILITIES
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_mcp.server import build_server
from fable_mcp.tools import PROFILES

# Bytes of tools/list a regular user is offered, by capability. Knowledge and the assistant were
# held to 30 KB together when the budget was set (issue 21); each later capability has a share of
# its own, so that the list grows by decision, not by drift.
BUDGETS: dict[tuple[str, ...], int] = {
    ("knowledge", "assistant"): 32_000, ("preferences",): 1_300, ("sharing",): 2_900, ("notifications",): 1_300,
    ("weather",): 1_000, ("moments",): 1_200, ("profile",): 1_100, ("journal",): 1_600, ("calendar",): 2_600,
    ("caldav",): 1_300, ("websearch",): 800, ("feeds",): 4_000, ("images",): 1_600, ("research",): 2_000,
    ("structured",): 3_700, ("calculator",): 650, ("backup",): 1_200, ("importers",): 1_350,
    ("export",): 0,  # export: for devices only, never offered
    ("drafts",): 0,  # the editor's unsaved edits and merges: for devices only, never offered
    ("browse",): 1_400,
    ("oauth",): 0,  # OAuth connections: for Settings only, never offered
    ("trash",): 1_050,
}
TOTAL = 63_550  # 35,000 before issue 14, and the budgets of its capabilities above
# (issue 18: +2,000 chat, previews, confirm and task filters; +1,400 browse; +1,050 trash)


def _names(result: types.ListToolsResult) -> set[str]:
    return {t.name for t in result.tools}


def _wire_bytes(result: types.ListToolsResult) -> int:
    """The result as a server sends it: compact JSON, no nulls."""
    dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return len(json.dumps(dumped, separators=(",", ":"), ensure_ascii=False).encode())


def _capability(fable: Fable, name: str) -> str:
    module = fable.registry.get(name).module  # type: ignore[union-attr]
    return next(c.name for c in CAPABILITIES if module in c.modules)


@pytest.fixture
def every_service(fable: Fable, model_answering: None) -> Iterator[None]:
    """The shared Fable as if every optional service answered, for what is listed."""
    fable.availability.set("searxng", True)
    yield
    fable.availability.set("searxng", False)


async def test_a_regular_users_whole_tool_list_fits_the_budget(
        connect_fast, fable: Fable, alice: Caller, bob: Caller, every_service: None) -> None:
    async with connect_fast(as_=bob) as client:
        result = await client.list_tools()
    everything = {t.name for t in fable.registry if t.allows(bob) and t.agents}  # every service answers: all
    assert _names(result) == everything and any(t.needs for t in fable.registry if t.name in everything)
    size = _wire_bytes(result)
    assert size <= TOTAL, f"tools/list is {size:,} bytes for {len(everything)} tools (budget {TOTAL:,})"
    spent: dict[str, int] = {}
    for tool in result.tools:  # each tool's own bytes in the list (and the comma after it)
        dumped = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
        used = len(json.dumps(dumped, separators=(",", ":"), ensure_ascii=False).encode()) + 1
        spent[_capability(fable, tool.name)] = spent.get(_capability(fable, tool.name), 0) + used
    assert set(spent) <= {c for group in BUDGETS for c in group}, f"give these capabilities a budget: {spent}"
    for group, budget in BUDGETS.items():
        used = sum(spent.get(c, 0) for c in group)
        assert used <= budget, f"{' + '.join(group)}: {used:,} bytes of tools/list (budget {budget:,})"


async def test_tools_for_devices_are_not_offered_to_agents(connect_fast, fable: Fable, bob: Caller) -> None:
    devices = {t.name for t in fable.registry if not t.agents}
    assert {"subscribe_push", "unsubscribe_push", "get_push_public_key"} <= devices
    async with connect_fast(as_=bob) as client:
        assert not devices & _names(await client.list_tools())


async def test_admin_tools_are_offered_to_admins_only_and_refused_to_others(
        connect_fast, fable: Fable, alice: Caller, bob: Caller, model_answering: None) -> None:
    admin_tools = {t.name for t in fable.registry if t.admin and t.agents and t.credentials == "any"}  # a key's
    async with connect_fast() as client:
        alices = _names(await client.list_tools())
    async with connect_fast(as_=bob) as client:
        bobs = _names(await client.list_tools())
        refused = await client.call_tool("delete_model", {"name": "qwen3:8b"})
    assert admin_tools and admin_tools <= alices and not admin_tools & bobs
    assert refused.is_error and "delete_model is for admins" in refused.content[0].text


async def test_model_tools_are_offered_while_a_model_answers_and_clients_hear_of_the_change(
        connect_fast, fable: Fable) -> None:
    needing = {t.name for t in fable.registry if t.needs == {"llm"}}  # research needs SearXNG too
    heard = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            heard.set()

    async with connect_fast(mode="legacy", message_handler=on_message) as client:
        without = _names(await client.list_tools())
        fable.availability.set("llm", True)
        try:
            with anyio.fail_after(10):
                await heard.wait()
            with_model = _names(await client.list_tools())
        finally:
            fable.availability.set("llm", False)
    assert needing and not needing & without and needing <= with_model
    assert with_model - without == needing


async def test_a_listen_stream_hears_that_the_tool_list_changed(connect_fast, fable: Fable) -> None:
    async with connect_fast() as client, client.listen(tools_list_changed=True) as stream:
        fable.availability.set("llm", True)
        try:
            with anyio.fail_after(10):
                event = await anext(aiter(stream))
        finally:
            fable.availability.set("llm", False)
    assert event == ToolsListChanged()


async def test_a_profile_narrows_the_list_to_its_tools_and_named_ones(fable: Fable, alice: Caller) -> None:
    local = Fable(fable.settings.model_copy(update={"fable_mcp_tools": ["core", "log_work"]}), fable.db)
    async with Client(build_server(local, alice)) as client:
        listed = _names(await client.list_tools())
    core = {t.name for t in fable.registry.for_caller(alice, fable.availability)
            if t.name in PROFILES["core"] and t.agents}  # device-only tools (parse_task) are never offered
    assert {"create_note", "search_notes", "list_tasks"} <= core
    assert listed == core | {"log_work"}


@pytest.mark.parametrize("entry", ["nots", "Core"])
def test_an_unknown_profile_entry_is_refused_naming_it(fable: Fable, alice: Caller, entry: str) -> None:
    local = Fable(fable.settings.model_copy(update={"fable_mcp_tools": ["core", entry]}), fable.db)
    with pytest.raises(ValueError, match=f"FABLE_MCP_TOOLS: unknown {entry}; use all, core, a toolset"):
        build_server(local, alice)


async def test_account_and_admin_tools_are_offered_to_no_key_and_refused_to_one(
        connect_fast, fable: Fable, alice: Caller) -> None:
    """An admin's API key over MCP: none of the session-only tools (one's credentials, accounts,
    the instance) is listed, and calling one by name is refused as session-only."""
    session_only = {t.name for t in fable.registry if t.credentials == "session"}
    assert {"change_password", "create_api_key", "list_users", "set_mail_server"} <= session_only
    async with connect_fast() as client:  # alice, the admin, with a write key
        assert not session_only & _names(await client.list_tools())
        refused = await client.call_tool("update_user", {"user_id": alice.user_id, "role": "user"})
    assert refused.is_error and "runs only in a signed-in session" in refused.content[0].text
    async with fable.db.reading() as session:
        from fable_core.identity.accounts import get_user

        assert (await get_user(session, alice.user_id)).role == "admin"
