"""Sharing through the dispatcher: who sees what, at which permission, and what each may do."""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import pytest
from support.users import quick_user

from fable_core.errors import Forbidden, InvalidInput, NotFound
from fable_core.runtime import Fable
from fable_core.tools.access import reach_of
from fable_core.tools.caller import Caller

carol = quick_user("carol")


async def _house(fable: Fable, alice: Caller) -> dict[str, Any]:
    project = await fable.call("create_project", {"title": "House"}, alice)
    roof = await fable.call("create_note", {"title": "Fix the roof", "body": "tiles [[Budget]]",
                                            "project_id": project["id"], "status": "todo"}, alice)
    budget = await fable.call("create_note", {"title": "Budget", "body": "money"}, alice)
    diary = await fable.call("create_note", {"title": "Secret diary", "body": "private"}, alice)
    return {"project": project, "roof": roof, "budget": budget, "diary": diary}


async def test_a_shared_project_shows_its_notes_with_owner_and_permission(
        fable: Fable, alice: Caller, bob: Caller) -> None:
    house = await _house(fable, alice)
    await fable.call("create_note", {"title": "Bob's own"}, bob)
    await fable.call("share", {"project_id": house["project"]["id"], "with_user": "bob", "permission": "editor"}, alice)
    listed = await fable.call("list_notes", {}, bob)
    titles = {n["title"]: n for n in listed["items"]}
    assert set(titles) == {"Fix the roof", "Bob's own"}
    assert titles["Fix the roof"]["owner"] == "alice" and titles["Fix the roof"]["permission"] == "editor"
    assert "owner" not in titles["Bob's own"]  # compact: none for one's own
    projects = await fable.call("list_projects", {}, bob)
    assert [(p["title"], p["owner"], p["permission"]) for p in projects["items"]] == [("House", "alice", "editor")]
    found = await fable.call("search_notes", {"query": "roof"}, bob)
    assert [h["title"] for h in found["items"]] == ["Fix the roof"]
    assert (await fable.call("search_notes", {"query": "diary"}, bob))["items"] == []
    with pytest.raises(NotFound):
        await fable.call("read_note", {"note_id": house["diary"]["id"]}, bob)
    read = await fable.call("read_note", {"note_id": house["roof"]["id"]}, bob)
    assert read["owner"] == "alice" and read["permission"] == "editor"


async def test_an_editor_edits_content_but_cannot_delete_the_project_or_reshare(
        fable: Fable, alice: Caller, bob: Caller, carol: Caller) -> None:
    house = await _house(fable, alice)
    pid = house["project"]["id"]
    await fable.call("share", {"project_id": pid, "with_user": "bob", "permission": "editor"}, alice)
    await fable.call("update_note", {"note_id": house["roof"]["id"], "body": "new tiles"}, bob)
    task = await fable.call("create_note", {"title": "Paint the door", "project_id": pid}, bob)
    assert task["owner"] == "alice"  # content of a shared project is its owner's
    mine = await fable.call("list_notes", {"project_id": pid}, alice)
    assert "Paint the door" in [n["title"] for n in mine["items"]]
    await fable.call("create_milestone", {"project_id": pid, "title": "Spring"}, bob)
    await fable.call("delete_note", {"note_id": task["id"]}, bob)
    with pytest.raises(Forbidden):
        await fable.call("delete_project", {"project_id": pid}, bob)
    with pytest.raises(Forbidden):
        await fable.call("share", {"project_id": pid, "with_user": "carol"}, bob)
    own = await fable.call("create_note", {"title": "Bob's note"}, bob)
    with pytest.raises(InvalidInput):  # a note of bob's own cannot go into alice's project
        await fable.call("update_note", {"note_id": own["id"], "project_id": pid}, bob)


async def test_a_viewer_reads_and_is_refused_changes(fable: Fable, alice: Caller, bob: Caller) -> None:
    house = await _house(fable, alice)
    await fable.call("share", {"project_id": house["project"]["id"], "with_user": "bob"}, alice)
    await fable.call("read_note", {"note_id": house["roof"]["id"]}, bob)
    with pytest.raises(Forbidden) as refused:
        await fable.call("update_note", {"note_id": house["roof"]["id"], "title": "Mine now"}, bob)
    assert "viewer" in str(refused.value)
    with pytest.raises(Forbidden):
        await fable.call("create_note", {"title": "x", "project_id": house["project"]["id"]}, bob)


async def test_revoking_takes_effect_at_the_next_call_and_the_owner_is_told_nothing(
        fable: Fable, alice: Caller, bob: Caller) -> None:
    house = await _house(fable, alice)
    made = await fable.call("share", {"note_id": house["budget"]["id"], "with_user": "bob"}, alice)
    assert (await fable.call("read_note", {"note_id": house["budget"]["id"]}, bob))["title"] == "Budget"
    await fable.call("unshare", {"share_id": made["id"]}, alice)
    with pytest.raises(NotFound):
        await fable.call("read_note", {"note_id": house["budget"]["id"]}, bob)


async def test_a_revoked_share_is_gone_on_every_pooled_connection_not_only_in_new_sessions(
        fable: Fable, alice: Caller, bob: Caller) -> None:
    """Reads on a bare connection (the assistant's retrieval) remember the reach only while they
    hold it: the pool hands the same database connection out again, and a reach kept on it
    would outlive the revocation (found when a chat still retrieved an unshared note)."""
    house = await _house(fable, alice)
    made = await fable.call("share", {"note_id": house["budget"]["id"], "with_user": "bob"}, alice)

    async def reaches_on_every_connection() -> list[bool]:
        async with AsyncExitStack() as stack:
            conns = [await stack.enter_async_context(fable.db.engine.connect()) for _ in range(3)]
            return [house["budget"]["id"] in (await reach_of(c, bob)).notes for c in conns]

    assert await reaches_on_every_connection() == [True, True, True]
    await fable.call("unshare", {"share_id": made["id"]}, alice)
    assert await reaches_on_every_connection() == [False, False, False]


async def test_a_group_share_reaches_its_members_until_they_leave(
        fable: Fable, alice: Caller, bob: Caller, carol: Caller) -> None:
    house = await _house(fable, alice)  # alice is the first user: an admin
    group = await fable.call("create_group", {"name": "Family"}, alice)
    await fable.call("add_group_member", {"group_id": group["id"], "username": "bob"}, alice)
    await fable.call("share", {"project_id": house["project"]["id"], "with_group": "family"}, alice)
    assert [n["title"] for n in (await fable.call("list_notes", {}, bob))["items"]] == ["Fix the roof"]
    assert (await fable.call("list_notes", {}, carol))["items"] == []
    await fable.call("remove_group_member", {"group_id": group["id"], "username": "bob"}, bob)
    assert (await fable.call("list_notes", {}, bob))["items"] == []


async def test_sharing_refuses_bad_input_and_changes_nothing(fable: Fable, alice: Caller, bob: Caller) -> None:
    house = await _house(fable, alice)
    pid = house["project"]["id"]
    for arguments, error in [
        ({"project_id": pid, "with_user": "alice"}, InvalidInput),
        ({"project_id": pid, "with_user": "nobody"}, NotFound),
        ({"project_id": pid, "with_group": "nobody"}, NotFound),
        ({"project_id": pid, "with_user": "bob", "permission": "owner"}, InvalidInput),
        ({"project_id": pid}, InvalidInput),
        ({"project_id": pid, "note_id": house["roof"]["id"], "with_user": "bob"}, InvalidInput),
        ({"project_id": 999_999, "with_user": "bob"}, NotFound),
    ]:
        with pytest.raises(error):
            await fable.call("share", arguments, alice)
    with pytest.raises(NotFound):  # bob cannot even see it
        await fable.call("share", {"project_id": pid, "with_user": "alice"}, bob)
    assert (await fable.call("list_shares", {"shared": "by_me"}, alice))["items"] == []


async def test_titles_of_unseen_notes_do_not_leak_through_links_duplicates_or_completions(
        fable: Fable, alice: Caller, bob: Caller) -> None:
    house = await _house(fable, alice)
    pid = house["project"]["id"]
    await fable.call("share", {"project_id": pid, "with_user": "bob", "permission": "editor"}, alice)
    # alice has a "Secret diary" bob cannot see: creating one in her project is not refused
    made = await fable.call("create_note", {"title": "Secret diary", "project_id": pid}, bob)
    assert made["title"] == "Secret diary"
    backlinks = await fable.call("get_backlinks", {"note_id": house["budget"]["id"]}, alice)
    assert [b["title"] for b in backlinks["items"]] == ["Fix the roof"]
    with pytest.raises(NotFound):
        await fable.call("get_backlinks", {"note_id": house["budget"]["id"]}, bob)
    tags = await fable.call("list_tags", {}, bob)
    assert tags["items"] == []
