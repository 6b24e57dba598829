"""The permission matrix: every registered tool that names a row, on every surface (MCP over
HTTP, REST, the assistant's tool loop), for every kind of person alice's project reaches or does
not: its owner, a share admin, an editor, a group member (editor through the group), a viewer,
a former group member, someone whose share was revoked, and a stranger.

The oracle, per tool: what it needs of the shared row (reading tools: viewer; writing tools:
editor; a few need more, :data:`NEEDS`). Someone with no access gets NotFound, exactly as for a
row that does not exist; someone who sees the row but may not do this gets Forbidden and nothing
changes; someone allowed gets what the owner gets. No answer to anyone but alice ever carries a
title of hers that is shared with no one. A tool naming a kind of row this file does not know
fails ``test_every_row_argument_is_known`` until it learns it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import replace
from itertools import count
from typing import Any

import httpx
import pytest
from mcp import Client
from sqlalchemy import text
from support.fake_llm import FakeLLM, Reply
from support.matrix_world import LEVEL, PRIVATE, ROLES, SHARED, People, World, build_world
from support.mcp_clients import http_connect
from support.pace import scaled

from fable_core.assistant.toolloop import LoopResult, run_tool_loop
from fable_core.capabilities import load_capabilities
from fable_core.errors import FableError
from fable_core.runtime import Fable
from fable_core.tools import REGISTRY, Tool

load_capabilities()

# The argument that names the shared row, by the kind of row it names, in order of preference
TARGETS = {"note_id": "note", "milestone_id": "milestone", "project_id": "project", "log_id": "log",
           "share_id": "share", "rag_project_id": "project", "parent_id": "parent"}
# Row arguments that are not the shared row: the caller's own, or hints a tool may ignore
OWN = {"conversation_id", "exclude_note_id", "group_id", "moment_id", "event_id",
       "feed_id", "item_id", "run_id", "image_id", "trashed_id",
       "connection_id",  # feeds, research runs, images, trash and OAuth connections are never shared rows
       "session_id", "key_id",  # one's own sessions and API keys
       "user_id", "invitation_id"}  # accounts and invitations an admin manages
# Which row a tool is pointed at when not the one its argument names first
ROW = {"get_backlinks": "parent"}  # the note alice's unshared diary links to
# What a tool needs of the shared row, when not viewer (reads) or editor (writes)
NEEDS = {
    "delete_project": "admin", "share": "admin", "unshare": "admin",
    # a conversation of one's own, scoped to a project one may read
    "create_conversation": "viewer", "set_rag_scope": "viewer", "start_chat": "viewer",
    # a draft is the caller's own: there is none to accept or drop without assist_note (editor),
    # which these tools then change the note through (update_note / edit_note: editor)
    "accept_note_draft": "viewer", "reject_note_draft": "viewer",
    # an event is the caller's own; linking it to a note or project needs only reading that
    "create_event": "viewer", "update_event": "viewer",
    # an edit draft is the caller's own: dropping it needs only seeing the note (saving one: editor)
    "discard_draft": "viewer",
}
_LEVELS = {"viewer": 1, "editor": 2, "admin": 3}
# Values for the other required arguments
SAMPLES: dict[str, Any] = {
    "query": "roof", "text": "more", "operation": "append", "to": "task", "from_version": 1, "version": 1,
    "due_date": "2026-12-24", "minutes": 5, "instruction": "shorter", "content": "hello",
    "with_user": "gina", "name": "qwen3:8b", "start": "2026-12-07T09:00", "kind": "person", "expression": "2^10",
    "base_version": 1, "body": "hello",
}
_UNIQUE = count(1)


def _target(t: Tool) -> str | None:
    props = t.input_schema.get("properties", {})
    ids = [n for n, p in props.items() if n.endswith("_id") and "integer" in str(p.get("type"))]
    return next((n for n in TARGETS if n in ids), None)


CASES = [t for t in REGISTRY if _target(t) is not None]


def test_every_row_argument_is_known() -> None:
    unknown = set()
    for t in REGISTRY:
        props = t.input_schema.get("properties", {})
        unknown |= {f"{t.name}.{n}" for n, p in props.items()
                    if n.endswith("_id") and "integer" in str(p.get("type")) and n not in TARGETS and n not in OWN}
    assert not unknown, f"teach test_matrix.py (TARGETS or OWN) which rows these name: {sorted(unknown)}"
    assert len(CASES) >= 30


def arguments(t: Tool, world: World, people: People, role: str) -> dict[str, Any]:
    target = _target(t)
    assert target is not None
    row = ROW.get(t.name, TARGETS[target])
    args: dict[str, Any] = {target: world.rows[row]}
    schema = t.input_schema
    if "conversation_id" in schema.get("properties", {}):
        args["conversation_id"] = people.conversations[role]
    if "event_id" in schema.get("properties", {}):
        args["event_id"] = people.events[role]
    for name in schema.get("required", []):
        if name in args:
            continue
        if name in ("title", "person", "place"):
            args[name] = f"Probe {next(_UNIQUE)}"
        elif name == "milestone_ids":
            args[name] = [world.rows["milestone"]]
        else:
            args[name] = SAMPLES[name]
    return args


def expected(t: Tool, role: str, owners: str) -> str:
    """What ``role`` must get from ``t`` on alice's shared row, the owner having got ``owners``."""
    need = _LEVELS[NEEDS.get(t.name, "viewer" if t.scope == "read" else "editor")]
    if t.name == "unshare" and role == "viewer":  # the share pointed at is the viewer's own: they may drop it
        need = 1
    if LEVEL[role] == 0:
        return "not_found"
    if LEVEL[role] < need:
        return "forbidden"
    return owners


# --- the surfaces: each runs a tool for a role and says how it went ("ok" or the error's type) -----


Outcome = tuple[str, str]  # (kind, everything the caller was told)
Runner = Callable[[str, dict[str, Any], str], Awaitable[Outcome]]


async def _in_process(fable: Fable, people: People, name: str, args: dict[str, Any], role: str) -> Outcome:
    try:
        result = await fable.call(name, args, people.callers[role])
    except FableError as e:
        return e.type, json.dumps(e.to_dict(), default=str)
    return "ok", json.dumps(result, default=str)


async def _mcp(clients: dict[str, Client], name: str, args: dict[str, Any], role: str) -> Outcome:
    result = await clients[role].call_tool(name, args)
    text = " ".join(getattr(c, "text", "") for c in result.content)
    return (text.split(":", 1)[0] if result.is_error else "ok"), text


async def _rest(http: httpx.AsyncClient, people: People, t: Tool, args: dict[str, Any], role: str) -> Outcome:
    assert t.route is not None
    path, rest = t.route.path, dict(args)
    for param in t.route.path_params:
        path = path.replace(f"{{{param}}}", str(rest.pop(param)))
    headers = {"Authorization": f"Bearer {people.keys[role]}"}
    if t.route.method in ("GET", "DELETE"):
        response = await http.request(t.route.method, f"/api{path}", params=rest, headers=headers)
    else:
        response = await http.request(t.route.method, f"/api{path}", json=rest, headers=headers)
    if response.is_success:
        return "ok", response.text
    return response.json()["error"]["type"], response.text


async def _assistant(fable: Fable, llm: FakeLLM, people: People, name: str, args: dict[str, Any],
                     role: str) -> Outcome:
    llm.replies.append(Reply("", [(name, args)]))
    result = LoopResult()

    async def emit(event: str, data: dict[str, Any]) -> None:
        pass

    await run_tool_loop(fable.llm, fable.dispatcher, replace(people.callers[role], surface="assistant"),
                        [{"role": "user", "content": "go"}], emit, result, rounds=1)
    [event] = result.tool_events
    if event.get("requires_confirmation") and REGISTRY.get(name).confirm:  # type: ignore[union-attr]
        # it ran nothing: the person confirms, as the chat's Confirm does (the same call, as them)
        return await _in_process(fable, people, name, event["confirm_arguments"], role)
    text = json.dumps(event, default=str)
    return ("ok" if event["ok"] else event["error"]["type"]), text


Run = Callable[[Tool, dict[str, Any], str], Awaitable[Outcome]]


Surface = Callable[[], AbstractAsyncContextManager[Run]]


@pytest.fixture(params=["mcp", "rest", "assistant"])
def surface(request: pytest.FixtureRequest, app_url: str, matrix_fable: Fable, matrix_llm: FakeLLM,
            people: People) -> Surface:
    """How a tool is run on one surface, as each role (MCP: a session per role over HTTP with
    the role's key; REST: the role's key; the assistant: a tool loop turn as the role). Opened
    in the test's own task (the MCP client's task group must close where it opened)."""
    matrix_llm.reset()

    @asynccontextmanager
    async def opened() -> AsyncIterator[Run]:
        async with AsyncExitStack() as stack:
            if request.param == "mcp":
                clients = {role: await stack.enter_async_context(http_connect(f"{app_url}/mcp", people.keys[role]))
                           for role in ROLES}
                yield lambda t, a, r: _mcp(clients, t.name, a, r)
            elif request.param == "rest":
                http = await stack.enter_async_context(httpx.AsyncClient(base_url=app_url, timeout=scaled(30)))
                yield lambda t, a, r: _rest(http, people, t, a, r)
            else:
                # a tool only devices use (agents=False) is never offered to the assistant: as the UI runs it
                run = lambda t, a, r: (  # noqa: E731
                    _assistant(matrix_fable, matrix_llm, people, t.name, a, r) if t.agents
                    else _in_process(matrix_fable, people, t.name, a, r))
                setattr(run, "assistant", True)  # noqa: B010  tools never offered to the model (assistant=False) are skipped
                yield run

    return opened


_SNAPSHOT = {  # what tools change; a project's summary is rewritten in the background, so it is left out
    "notes": "*", "note_versions": "*", "milestones": "*", "task_logs": "*", "shares": "*", "note_links": "*",
    "projects": "id, user_id, title, description, goal, status, color",
}


async def _snapshot(fable: Fable) -> str:
    """alice's rows and the shares, as text: what a refused call must leave as it was."""
    parts = []
    async with fable.db.engine.connect() as conn:
        for table, columns in _SNAPSHOT.items():
            rows = (await conn.execute(text(f"SELECT {columns} FROM {table} ORDER BY 1"))).all()
            parts.append(f"{table}: {[tuple(r) for r in rows]}")
    return "\n".join(parts)


@pytest.mark.slow
async def test_every_tool_on_every_surface_for_every_role(surface: Surface, matrix_fable: Fable,
                                                         people: People) -> None:
    async with surface() as run:
        wrong = await _outcomes(run, matrix_fable, people)
    assert not wrong, f"{len(wrong)} wrong outcomes:\n" + "\n".join(wrong)


async def _outcomes(run: Run, matrix_fable: Fable, people: People) -> list[str]:
    """What went otherwise than the oracle says, for every tool and role."""
    wrong: list[str] = []
    for t in CASES:
        if not t.assistant and getattr(run, "assistant", False):
            continue  # not on this surface (the model does not chat with itself)
        if t.name not in _OWNERS:  # the same on every surface: asked once
            baseline = await build_world(matrix_fable, people)
            _OWNERS[t.name] = (await _in_process(matrix_fable, people, t.name,
                                                 arguments(t, baseline, people, "owner"), "owner"))[0]
        plan = {role: expected(t, role, _OWNERS[t.name]) for role in ROLES}
        world = await build_world(matrix_fable, people)
        before = await _snapshot(matrix_fable)
        outcomes = {}
        for role in [r for r, w in plan.items() if w in ("not_found", "forbidden")]:
            outcomes[role] = await run(t, arguments(t, world, people, role), role)
        if await _snapshot(matrix_fable) != before:
            wrong.append(f"{t.name}: a refused call changed something")
        for role in [r for r, w in plan.items() if w not in ("not_found", "forbidden")]:
            if t.annotations.destructive:  # what it deleted is gone for the next role: a world each
                world = await build_world(matrix_fable, people)
            outcomes[role] = await run(t, arguments(t, world, people, role), role)
        for role, (got, told) in outcomes.items():
            if got != plan[role]:
                wrong.append(f"{t.name} as {role}: {got}, expected {plan[role]}: {told[:200]}")
            if role != "owner" and PRIVATE in told:
                wrong.append(f"{t.name} as {role} was told of alice's unshared rows: {told[:300]}")
    return wrong


_OWNERS: dict[str, str] = {}  # what alice gets from each tool on her own world


# What a listing shows of alice's shared rows (to those it reaches, and to no one else)
SHOWN = {"list_notes": SHARED, "search_notes": SHARED, "list_tasks": SHARED, "list_projects": "House ",
         "list_tags": '"house"'}


def _listings() -> list[Tool]:
    """Read tools called with no row named (listings, searches, reports); not the toolsets' (they
    list tools, on MCP)."""
    return [t for t in REGISTRY if t.scope == "read" and not t.stream and not t.admin and t.agents
            and t.group != "toolsets"
            and set(t.input_schema.get("required", [])) <= set(SAMPLES) and (_target(t) is None or t.name in SHOWN)]


async def test_listings_show_what_is_shared_and_nothing_else(surface: Surface, matrix_fable: Fable,
                                                             people: People) -> None:
    await build_world(matrix_fable, people)
    wrong = []
    assert set(SHOWN) <= {t.name for t in _listings()}
    async with surface() as run:
        for t in _listings():
            if not matrix_fable.availability.meets(t.needs) or (not t.assistant and getattr(run, "assistant", False)):
                continue  # not offered here (web search without SearXNG): it lists nobody's rows anyway
            args = {name: SAMPLES[name] for name in t.input_schema.get("required", [])}
            for role in ROLES:
                got, told = await run(t, args, role)
                if got != "ok":
                    wrong.append(f"{t.name} as {role}: {got}: {told[:200]}")
                if role != "owner" and PRIVATE in told:
                    wrong.append(f"{t.name} as {role} was told of alice's unshared rows: {told[:300]}")
                if t.name in SHOWN and (SHOWN[t.name] in told) != (LEVEL[role] > 0):
                    wrong.append(f"{t.name} as {role} {'hid' if LEVEL[role] else 'showed'} the shared rows: "
                                 f"{told[:300]}")
    assert not wrong, "\n".join(wrong)
