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
from sqlalchemy import update
from support.mcp_clients import http_connect, make_key
from support.pace import scaled

from fable_core.config import load_settings
from fable_core.db.models import ApiKey
from fable_core.errors import InvalidInput
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.toolsets import DEFAULT, DISCOVERY, TOOLSETS
from fable_mcp.server import build_server

# The default offer, for any caller on any transport: a product limit (issue 35), never raised
# to make room. A new tool goes into its toolset, not the default, unless it displaces one.
MAX_TOOLS = 40
MAX_BYTES = 30_000
MAX_INSTRUCTIONS = 2_000


def _names(result: types.ListToolsResult) -> set[str]:
    return {t.name for t in result.tools}


def _wire_bytes(result: types.ListToolsResult) -> int:
    """The result as a server sends it: compact JSON, no nulls."""
    dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return len(json.dumps(dumped, separators=(",", ":"), ensure_ascii=False).encode())


@pytest.fixture
def every_service(fable: Fable, model_answering: None) -> Iterator[None]:
    """The shared Fable as if every optional service answered, for what is listed."""
    fable.availability.set("searxng", True)
    yield
    fable.availability.set("searxng", False)


def _check_default(result: types.ListToolsResult, instructions: str | None, *, writes: bool = True) -> None:
    size = _wire_bytes(result)
    assert len(result.tools) <= MAX_TOOLS and size <= MAX_BYTES, (
        f"the default offer is {len(result.tools)} tools and {size:,} bytes (budget {MAX_TOOLS}, {MAX_BYTES:,})")
    assert len((instructions or "").encode()) <= MAX_INSTRUCTIONS
    names = _names(result)
    assert names >= DISCOVERY and {"read_note", "search_notes", "list_tasks", "list_events"} <= names
    assert names <= DEFAULT and ("create_note" in names) == writes


async def test_a_regular_users_default_offer_fits_the_budget_on_every_transport(
        connect, bob: Caller, every_service: None) -> None:
    async with connect(as_=bob, toolsets=["default"]) as client:
        _check_default(await client.list_tools(), client.instructions)


@pytest.mark.parametrize("who", ["admin", "read key", "no model"])
async def test_every_callers_default_offer_fits_the_budget(
        connect_fast, alice: Caller, bob: Caller, who: str, request: pytest.FixtureRequest) -> None:
    if who != "no model":
        request.getfixturevalue("every_service")
    as_, scope = {"admin": (alice, "write"), "read key": (bob, "read"), "no model": (bob, "write")}[who]
    async with connect_fast(as_=as_, scope=scope, toolsets=["default"]) as client:
        _check_default(await client.list_tools(), client.instructions, writes=scope == "write")


def test_the_default_is_the_default() -> None:
    assert load_settings({}).fable_mcp_toolsets == ["default"]


async def test_the_default_is_what_people_do_most(fable: Fable) -> None:
    """Every default tool exists and is for agents; notes, tasks, projects, today's agenda and
    the journal's day are all in it; every toolset has its line."""
    by_name = {t.name: t for t in fable.registry}
    assert set(by_name) >= DEFAULT and all(by_name[n].agents for n in DEFAULT)
    assert {by_name[n].group for n in DEFAULT} >= {"notes", "tasks", "projects", "calendar", "journal", "toolsets"}
    assert {t.group for t in fable.registry} == set(TOOLSETS)


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
            with anyio.fail_after(scaled(10)):
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
            with anyio.fail_after(scaled(10)):
                event = await anext(aiter(stream))
        finally:
            fable.availability.set("llm", False)
    assert event == ToolsListChanged()


async def test_a_toolset_enabled_in_a_2025_session_is_listed_and_callable_there(
        connect_fast, fable: Fable, bob: Caller) -> None:
    heard = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            heard.set()

    async with connect_fast(as_=bob, toolsets=["default"], mode="legacy", message_handler=on_message) as client:
        before = _names(await client.list_tools())
        refused = await client.call_tool("list_feeds", {})
        enabled = await client.call_tool("enable_toolset", {"toolset": "feeds"})
        with anyio.fail_after(scaled(10)):
            await heard.wait()
        after = _names(await client.list_tools())
        called = await client.call_tool("list_feeds", {})
        async with connect_fast(as_=bob, toolsets=["default"], mode="legacy") as other:  # its own offer
            others = _names(await other.list_tools())
    feeds = {t.name for t in fable.registry if t.group == "feeds" and t.agents}
    assert not feeds & before and feeds <= after and after - before == feeds
    assert refused.is_error and "enable_toolset with toolset=feeds" in refused.content[0].text
    assert not enabled.is_error and set(json.loads(enabled.content[0].text)["tools"]) == feeds
    assert not called.is_error and not feeds & others


async def test_a_listen_stream_hears_that_a_toolset_was_enabled(connect_fast, bob: Caller) -> None:
    async with connect_fast(as_=bob, toolsets=["default"]) as client, client.listen(tools_list_changed=True) as stream:
        await client.call_tool("enable_toolset", {"toolset": "people"})
        with anyio.fail_after(scaled(10)):
            event = await anext(aiter(stream))
        listed = _names(await client.list_tools())
    assert event == ToolsListChanged() and {"save_person", "save_place"} <= listed


async def test_a_client_that_never_lists_again_calls_what_it_found_by_name(connect, bob: Caller) -> None:
    """find_tools makes what it finds callable at once and gives the arguments of each tool it
    newly offers, so a client ignoring list_changed needs nothing else."""
    async with connect(as_=bob, toolsets=["default"]) as client:
        project = json.loads((await client.call_tool("create_project", {"title": "Shed"})).content[0].text)
        refused = await client.call_tool("create_milestone", {"project_id": project["id"], "title": "Roof"})
        found = json.loads((await client.call_tool(
            "find_tools", {"query": "add a milestone to a project"})).content[0].text)["tools"]
        made = await client.call_tool("create_milestone", {"project_id": project["id"], "title": "Roof"})
        again = json.loads((await client.call_tool(
            "find_tools", {"query": "add a milestone to a project"})).content[0].text)["tools"]
    assert refused.is_error and "not offered in this session" in refused.content[0].text
    milestone = next(f for f in found if f["name"] == "create_milestone")
    assert milestone["toolset"] == "projects" and "project_id" in milestone["input_schema"]["properties"]
    assert not made.is_error, made.content[0].text
    assert "create_milestone" not in [f["name"] for f in again]  # offered now: what it finds next is new


async def test_disabling_a_toolset_takes_its_tools_off_and_list_toolsets_counts_them(
        connect_fast, fable: Fable, bob: Caller) -> None:
    async with connect_fast(as_=bob, toolsets=["default"]) as client:
        await client.call_tool("enable_toolset", {"toolset": "calendar", "enabled": False})
        listed = _names(await client.list_tools())
        lines = json.loads((await client.call_tool("list_toolsets", {})).content[0].text)["toolsets"]
        refused = await client.call_tool("list_events", {})
    assert not {"list_events", "create_event"} & listed and "create_note" in listed
    by_name = {line["name"]: line for line in lines}
    assert by_name["calendar"]["offered"] == 0 and by_name["calendar"]["tools"] >= 4
    assert by_name["notes"]["offered"] >= 7 and "admin" not in by_name  # session-only sets are not for keys
    assert all(len(line["about"]) <= 80 for line in lines)
    assert refused.is_error and "enable_toolset" in refused.content[0].text


@pytest.mark.parametrize(("arguments", "error"), [
    ({"toolset": "nope"}, "no toolset 'nope' you can use"),
    ({"toolset": "models"}, "no toolset 'models' you can use"),  # admins only (and needs a model)
    ({"toolset": ""}, "toolset"),
])
async def test_enabling_an_unknown_toolset_is_refused_and_changes_nothing(
        connect_fast, bob: Caller, arguments: dict[str, str], error: str) -> None:
    async with connect_fast(as_=bob, toolsets=["default"]) as client:
        before = _names(await client.list_tools())
        refused = await client.call_tool("enable_toolset", arguments)
        after = _names(await client.list_tools())
    assert refused.is_error and error in refused.content[0].text and before == after


async def test_a_choice_made_up_front_narrows_or_widens_the_offer(fable: Fable, alice: Caller) -> None:
    async with Client(build_server(fable, alice, ["default", "calendar", "log_work"])) as client:
        chosen = _names(await client.list_tools())
    async with Client(build_server(fable, alice)) as client:  # the tests' FABLE_MCP_TOOLSETS=all
        everything = _names(await client.list_tools())
    calendar = {t.name for t in fable.registry.for_agents(alice, fable.availability) if t.group == "calendar"}
    assert calendar <= chosen and "log_work" in chosen and "subscribe_feed" not in chosen
    assert everything == {t.name for t in fable.registry.for_agents(alice, fable.availability)}


async def test_an_api_keys_toolsets_decide_its_offer(connect_fast, fable: Fable, bob: Caller) -> None:
    async with connect_fast(as_=bob, toolsets=["notes"]) as client:
        listed = _names(await client.list_tools())
    notes = {t.name for t in fable.registry.for_agents(bob, fable.availability) if t.group == "notes"}
    assert listed == notes | DISCOVERY


@pytest.mark.parametrize("entry", ["nots", "Default"])
def test_an_unknown_entry_in_the_servers_choice_is_refused_naming_it(fable: Fable, alice: Caller, entry: str) -> None:
    local = Fable(fable.settings.model_copy(update={"fable_mcp_toolsets": ["default", entry]}), fable.db)
    with pytest.raises(InvalidInput, match=f"FABLE_MCP_TOOLSETS: unknown {entry}; use all, default, a toolset"):
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


async def test_a_keys_new_toolsets_reach_its_client_at_the_next_request(
        fable: Fable, bob: Caller, mcp_base_url: str) -> None:
    key = await make_key(fable, bob, "write", ["notes"])
    async with http_connect(f"{mcp_base_url}/mcp", key) as client:
        before = _names(await client.list_tools())
        async with fable.db.transaction() as session:
            await session.execute(update(ApiKey).where(ApiKey.user_id == bob.user_id, ApiKey.toolsets.is_not(None))
                                  .values(toolsets=["calendar"]))
        fable.keys.forget()  # what the PATCH does in its process (and, by NOTIFY, in the others)
        after = _names(await client.list_tools())
    assert "create_note" in before and "list_events" not in before
    assert "list_events" in after and "create_note" not in after


def test_the_settings_former_name_still_chooses() -> None:
    assert load_settings({"FABLE_MCP_TOOLS": "core,calendar"}).fable_mcp_toolsets == ["default", "calendar"]
    assert load_settings({"FABLE_MCP_TOOLS": "core", "FABLE_MCP_TOOLSETS": "all"}).fable_mcp_toolsets == ["all"]
