"""Sharing beyond tool calls: MCP resources, completions and subscriptions, the web UI's rendered
wikilinks, and the notifications a share and its revocation send. Each reaches what is shared
with the caller and nothing else, and a revoked share stops at the next request."""

from __future__ import annotations

from dataclasses import replace

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.subscriptions import ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp_types import PromptReference
from sqlalchemy import select
from support.matrix_world import PRIVATE, SHARED, People, build_world
from support.mcp_clients import ResourceUpdates
from support.pace import scaled

from fable_core.db.models import Notification
from fable_core.runtime import Fable
from fable_mcp.server import build_server


def _mcp(fable: Fable, people: People, role: str) -> Client:
    return Client(build_server(fable, replace(people.callers[role], surface="mcp")))


async def test_resources_list_what_is_shared_and_never_the_rest(matrix_fable: Fable, people: People) -> None:
    world = await build_world(matrix_fable, people)
    async with _mcp(matrix_fable, people, "viewer") as client:
        listed = [r.name for r in (await client.list_resources()).resources]
        shared = await client.read_resource(f"fable://notes/{world.rows['note']}")
        with pytest.raises(MCPError):
            await client.read_resource(f"fable://notes/{world.rows['diary']}")
    assert any(SHARED in name for name in listed) and not any(PRIVATE in name for name in listed)
    assert SHARED in shared.contents[0].text
    async with _mcp(matrix_fable, people, "stranger") as client:
        assert not any(SHARED in r.name for r in (await client.list_resources()).resources)


async def test_completions_offer_shared_titles_only(matrix_fable: Fable, people: People) -> None:
    await build_world(matrix_fable, people)
    ref = PromptReference(type="ref/prompt", name="note_to_tasks")
    async with _mcp(matrix_fable, people, "editor") as client:
        shared = await client.complete(ref, {"name": "note", "value": "shared"})
        private = await client.complete(ref, {"name": "note", "value": PRIVATE.lower()})
    assert shared.completion.values and all(SHARED in v for v in shared.completion.values)
    assert private.completion.values == []


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_a_subscriber_hears_of_a_shared_note_until_the_share_is_revoked(
        matrix_fable: Fable, people: People) -> None:
    world = await build_world(matrix_fable, people)
    alice, uri = people.callers["owner"], f"fable://notes/{world.rows['note']}"
    updates = ResourceUpdates()
    async with Client(build_server(matrix_fable, replace(people.callers["viewer"], surface="mcp")),
                      mode="legacy", message_handler=updates) as client:
        await client.subscribe_resource(uri)
        await matrix_fable.call("update_note", {"note_id": world.rows["note"], "body": "changed"}, alice)
        with anyio.fail_after(scaled(10)):
            await updates.arrived.wait()
        await matrix_fable.call("unshare", {"share_id": world.rows["share"]}, alice)
        await matrix_fable.call("update_note", {"note_id": world.rows["note"], "body": "after"}, alice)
        await client.send_ping()
    assert updates.uris == [uri]


async def test_a_listen_stream_hears_shared_notes(matrix_fable: Fable, people: People) -> None:
    world = await build_world(matrix_fable, people)
    uri = f"fable://notes/{world.rows['note']}"
    async with _mcp(matrix_fable, people, "member") as client, \
            client.listen(resource_subscriptions=[uri]) as stream:
        await matrix_fable.call("edit_note", {"note_id": world.rows["note"], "operation": "append", "text": "x"},
                                people.callers["owner"])
        with anyio.fail_after(scaled(10)):
            event = await anext(aiter(stream))
    assert event == ResourceUpdated(uri=uri)


async def test_rendered_links_resolve_only_to_notes_the_reader_sees(
        matrix_fable: Fable, people: People, app_url: str) -> None:
    world = await build_world(matrix_fable, people)
    alice = people.callers["owner"]
    diary = world.rows["diary"]
    diary_title = (await matrix_fable.call("read_note", {"note_id": diary}, alice))["title"]
    await matrix_fable.call("update_note", {"note_id": world.rows["note"], "body": f"see [[{diary_title}]]"}, alice)
    async with httpx.AsyncClient(base_url=app_url) as http:
        as_viewer = await http.get(f"/api/notes/{world.rows['note']}/html",
                                   headers={"Authorization": f"Bearer {people.keys['viewer']}"})
        as_owner = await http.get(f"/api/notes/{world.rows['note']}/html",
                                  headers={"Authorization": f"Bearer {people.keys['owner']}"})
    assert f'href="/notes/{diary}"' in as_owner.json()["html"]
    assert f"/notes/{diary}" not in as_viewer.json()["html"] and "wikilink-missing" in as_viewer.json()["html"]


async def test_sharing_and_revoking_notify_the_people_reached(matrix_fable: Fable, people: People) -> None:
    await build_world(matrix_fable, people)
    async with matrix_fable.db.reading() as session:
        told = (await session.execute(select(Notification.user_id, Notification.kind, Notification.title)
                                      .order_by(Notification.id))).all()
    by_user = {}
    for user_id, kind, title in told:
        by_user.setdefault(user_id, []).append((kind, title))
    viewer, member, owner = (people.callers[r].user_id for r in ("viewer", "member", "owner"))
    assert [k for k, _ in by_user[viewer] if k == "share"] and "as viewer" in by_user[viewer][-1][1]
    assert any("through the group “Household”" in t for k, t in by_user[member] if k == "share")
    assert owner not in by_user or all(k == "group" for k, _ in by_user[owner])
    revoked = people.callers["revoked"].user_id
    assert [k for k, _ in by_user[revoked]][-2:] == ["share", "unshare"]
