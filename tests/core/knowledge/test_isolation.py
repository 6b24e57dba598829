"""Isolation, driven from the registry: every tool that names a row refuses another user's
rows with NotFound and changes nothing, and no listing shows another user's rows.

Refused means indistinguishable from a row that does not exist. A new tool is covered as soon
as it is registered. A tool taking a kind of row id this file
does not know yet fails ``test_every_row_id_argument_is_known`` until ``_KINDS`` learns it.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest
from sqlalchemy import insert
from support.images import png
from support.users import make_user

from fable_core.capabilities import load_capabilities
from fable_core.db.models import Feed, FeedItem, OAuthClient, OAuthGrant, ResearchRun
from fable_core.errors import FableError, InvalidInput, NotFound
from fable_core.identity.accounts import create_api_key
from fable_core.identity.login_sessions import start_session
from fable_core.tools import REGISTRY, Tool

load_capabilities()

# Which rows an argument names: "note" for note_id, parent_id, ...
_KINDS = {
    "note_id": "note",
    "parent_id": "note",
    "project_id": "project",
    "milestone_id": "milestone",
    "log_id": "log",
    "rag_project_id": "project",
    "conversation_id": "conversation",
    "exclude_note_id": "note",
    "share_id": "share",
    "group_id": "group",  # groups are platform-wide, seen by everyone: tests/core/sharing covers them
    "moment_id": "moment",
    "event_id": "event",
    "feed_id": "feed",
    "item_id": "feed_item",
    "image_id": "image",
    "run_id": "research_run",
    "connection_id": "oauth_connection",
    "trashed_id": "trashed",
    "session_id": "login_session",
    "key_id": "api_key",
    "user_id": "account",  # accounts and invitations are the instance's, for admins only: tests/web covers them
    "invitation_id": "invitation",
}
_PLATFORM_WIDE = {"group", "account", "invitation"}
# Tools that take one item of several kinds (naming two is bad input, refused before any lookup)
_ONE_ITEM = {"share": {"project_id", "note_id"}, "list_shares": {"project_id", "note_id"}}
# Values for other required arguments, where the schema alone gives no valid one.
_SAMPLES: dict[str, Any] = {
    "title": "Probe by bob",
    "text": "probe",
    "query": "secret",
    "version": 1,
    "from_version": 1,
    "minutes": 5,
    "due_date": "2026-12-01",
    "start": "2026-12-07T09:00",
    "toolsets": ["calendar"],
}


def _row_arguments(t: Tool) -> list[str]:
    """Arguments naming a row: integer ids (``last_event_id`` is a position in a stream)."""
    props = t.input_schema.get("properties", {})
    return [name for name, prop in props.items() if name.endswith("_id") and "integer" in str(prop.get("type"))]


_CASES = [(t.name, arg) for t in REGISTRY for arg in _row_arguments(t)]


async def _world(call, who, owner: str, fable=None) -> dict[str, int]:
    """A project, milestone, parent note, a versioned task under it with links and a work log;
    with ``fable``, the project shared with a friend of the owner's."""
    project = await call("create_project", title=f"{owner} secret project", as_=who)
    milestone = await call("create_milestone", project_id=project["id"], title=f"{owner} milestone", as_=who)
    parent = await call("create_note", title=f"{owner} parent", tags=[f"{owner}/secret"], as_=who)
    task = await call("create_note", title=f"{owner} secret task", body=f"## Part\nsecret [[{owner} parent]]",
                      status="todo", due_date="2026-12-01", recurrence_rule="FREQ=WEEKLY",
                      milestone_id=milestone["id"], parent_id=parent["id"], tags=[f"{owner}/secret"], as_=who)
    await call("update_note", note_id=task["id"], body=f"## Part\nsecret [[{owner} parent]] v2", as_=who)
    log = await call("log_work", note_id=task["id"], minutes=30, as_=who)
    rows = {"note": task["id"], "project": project["id"], "milestone": milestone["id"], "log": log["id"],
            "parent": parent["id"]}
    if "restore_note" in REGISTRY:
        thrown = await call("create_note", title=f"{owner} deleted note", as_=who)
        await call("delete_note", note_id=thrown["id"], as_=who)
        rows["trashed"] = thrown["id"]
    if "create_event" in REGISTRY:
        rows["event"] = (await call("create_event", title=f"{owner} secret event", start="2026-12-07T09:00",
                                    rrule="FREQ=DAILY", note_id=task["id"], as_=who))["id"]
    if "create_conversation" in REGISTRY:
        rows["conversation"] = (await call("create_conversation", title=f"{owner} chat", as_=who))["id"]
    if "record_moment" in REGISTRY:
        rows["moment"] = (await call("record_moment", text=f"{owner} secret moment", as_=who))["id"]
    if "upload_image" in REGISTRY:
        image = png(red=len(owner) * 20)  # each owner's own image (the same bytes would be one file, two rows)
        rows["image"] = (await call("upload_image", content=base64.b64encode(image).decode(), as_=who))["id"]
    if fable is not None:
        rows |= await _remote_rows(fable, who.user_id, owner)
        friend = await make_user(fable, f"{owner}friend", password=None)
        rows["share"] = (await call("share", project_id=project["id"], with_user=friend.username, as_=who))["id"]
    return rows


async def _remote_rows(fable, user_id: int, owner: str) -> dict[str, int]:
    """A feed with an item, a finished research run, an OAuth connection, a signed-in session
    and an API key, written as their tools would leave them (subscribing, researching and
    connecting need the outside world; signing in is the web surface's)."""
    async with fable.db.transaction() as session:
        feed = (await session.execute(insert(Feed).values(
            user_id=user_id, url=f"https://{owner}.example/feed.xml", name=f"{owner} secret feed")
            .returning(Feed.id))).scalar_one()
        item = (await session.execute(insert(FeedItem).values(
            feed_id=feed, user_id=user_id, guid=f"{owner}-1", title=f"{owner} secret item", content="secret")
            .returning(FeedItem.id))).scalar_one()
        run = (await session.execute(insert(ResearchRun).values(
            user_id=user_id, question=f"{owner} secret question", question_key=f"{owner} secret question",
            status="done").returning(ResearchRun.id))).scalar_one()
        client = (await session.execute(insert(OAuthClient).values(
            client_id=f"fc_{owner}", client_name=f"{owner} secret connector", redirect_uris=["https://x.example/cb"])
            .returning(OAuthClient.id))).scalar_one()
        connection = (await session.execute(insert(OAuthGrant).values(
            user_id=user_id, client_ref=client, scope="write").returning(OAuthGrant.id))).scalar_one()
        signed_in = await start_session(session, user_id)
        key, _ = await create_api_key(session, user_id, f"{owner} secret key")
    return {"feed": feed, "feed_item": item, "research_run": run, "oauth_connection": connection,
            "login_session": signed_in.row.id, "api_key": key.id}


def _sample(name: str, prop: dict[str, Any], own: dict[str, int]) -> Any:
    if name in _SAMPLES:
        return _SAMPLES[name]
    if name.endswith("_ids") and name[:-1] in _KINDS:
        return [own[_KINDS[name[:-1]]]]
    if "enum" in prop:
        return prop["enum"][0]
    if "const" in prop:
        return prop["const"]
    kind = prop.get("type")
    return {"string": "probe", "integer": 1, "number": 1, "boolean": False, "array": []}.get(kind)


def _row(argument: str, rows: dict[str, int]) -> int:
    return rows["parent"] if argument == "parent_id" else rows[_KINDS[argument]]


def _arguments(t: Tool, target: str, value: int, own: dict[str, int]) -> dict[str, Any]:
    """``target`` set to ``value``, every other row argument to bob's own row of that kind (as a
    real call would name them together), and every other required argument a valid value."""
    schema = t.input_schema
    args: dict[str, Any] = {target: value}
    alternatives = _ONE_ITEM.get(t.name, set())
    for name in schema.get("properties", {}):
        if name != target and name in _KINDS and not (target in alternatives and name in alternatives):
            args[name] = _row(name, own)
    for name in schema.get("required", []):
        if name not in args:
            args[name] = _sample(name, schema["properties"][name], own)
    return args | _CHANGES.get(t.name, {})


# Optional arguments without which a call changes nothing and is refused as such, before any lookup
_CHANGES: dict[str, dict[str, Any]] = {"update_feed": {"category": "probe by bob"}}


def test_every_row_id_argument_is_known() -> None:
    unknown = {f"{tool}.{arg}" for tool, arg in _CASES if arg not in _KINDS}
    assert not unknown, f"teach test_isolation.py (_KINDS) which rows these name: {sorted(unknown)}"
    assert len(_CASES) >= 20


_OWNED_CASES = [(t, a) for t, a in _CASES if _KINDS.get(a) not in _PLATFORM_WIDE]


@pytest.mark.parametrize(("tool_name", "argument"), _OWNED_CASES, ids=[f"{t}.{a}" for t, a in _OWNED_CASES])
async def test_another_users_row_is_not_found_and_nothing_changes(
    call, fable, alice, bob, fails, snapshot, tool_name, argument
) -> None:
    alices = await _world(call, alice, "alice", fable)
    bobs = await _world(call, bob, "bob", fable)
    t = REGISTRY.get(tool_name)
    args = _arguments(t, argument, _row(argument, alices), bobs)
    before = await snapshot()

    err = await fails(call(tool_name, as_=bob, **args), NotFound)

    assert await snapshot() == before
    # Indistinguishable from a row that does not exist: nothing about alice's row leaks.
    missing = await fails(call(tool_name, as_=bob, **{**args, argument: _MISSING}), NotFound)
    assert _masked(err, args[argument]) == _masked(missing, _MISSING)


_MISSING = 2**31 - 1


def _masked(err: FableError, row_id: int) -> tuple[str, str]:
    pattern = re.compile(rf"\b{row_id}\b")
    return pattern.sub("<id>", err.message), pattern.sub("<id>", json.dumps(err.details, sort_keys=True))


def _listing_tools() -> list[str]:
    """Read tools callable with no row named: listings, searches, tags."""
    found = []
    for t in REGISTRY:
        required = set(t.input_schema.get("required", []))
        if t.scope == "read" and not (required & set(_KINDS)) and required <= set(_SAMPLES):
            found.append(t.name)
    return found


@pytest.mark.parametrize("tool_name", _listing_tools())
async def test_listings_never_show_another_users_rows(call, alice, bob, tool_name) -> None:
    await _world(call, alice, "alice")
    await _world(call, bob, "bob")
    t = REGISTRY.get(tool_name)
    args = {name: _SAMPLES[name] for name in t.input_schema.get("required", [])}
    try:
        seen_by_bob = json.dumps(await call(tool_name, as_=bob, **args)).lower()
    except FableError as e:  # e.g. get_project without a project: not a listing
        seen_by_bob = e.message.lower()
    assert "alice" not in seen_by_bob
    if tool_name in _KNOWLEDGE_LISTINGS:
        # Control: the same listing shows alice her own rows, so the check above can fail.
        assert "alice" in json.dumps(await call(tool_name, as_=alice, **args)).lower()


_KNOWLEDGE_LISTINGS = {"list_notes", "search_notes", "list_tags", "list_tasks", "list_projects"}


async def test_knowledge_listings_are_all_checked() -> None:
    assert set(_listing_tools()) >= _KNOWLEDGE_LISTINGS


async def test_reordering_with_another_users_milestones_is_refused(call, alice, bob, fails, snapshot) -> None:
    alices = await _world(call, alice, "alice")
    bobs = await _world(call, bob, "bob")
    before = await snapshot()
    err = await fails(call("reorder_milestones", as_=bob, project_id=bobs["project"],
                           milestone_ids=[alices["milestone"], bobs["milestone"]]), InvalidInput)
    assert "alice" not in err.message.lower()
    assert await snapshot() == before


async def test_project_names_resolve_only_among_the_callers_projects(call, alice, bob, fails) -> None:
    await _world(call, alice, "alice")
    await fails(call("create_note", as_=bob, title="Probe", project="alice secret project"), NotFound)
    await fails(call("list_milestones", as_=bob, project="alice secret project"), NotFound)


async def test_titles_and_links_are_per_user(call, alice, bob) -> None:
    alices = await _world(call, alice, "alice")
    copy = await call("create_note", as_=bob, title="alice secret task", body="[[alice parent]]")
    assert copy["id"] != alices["note"]
    backlinks = await call("get_backlinks", note_id=alices["parent"])
    assert [b["id"] for b in backlinks["items"]] == [alices["note"]]
