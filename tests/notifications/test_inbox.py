"""The inbox tools through the dispatcher: newest first, paged, the unread count on the first
page, marking read (one's own only), and bad input refused with nothing changed."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from fable_core.db.models import Notification
from fable_core.errors import FableError, InvalidInput
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def _states(fable: Fable) -> list[tuple[Any, ...]]:
    async with fable.db.reading() as session:
        return [tuple(r) for r in await session.execute(
            select(Notification.id, Notification.user_id, Notification.read_at).order_by(Notification.id))]


async def test_the_list_is_newest_first_paged_and_the_first_page_counts_unread(
        fable: Fable, alice: Caller, bob: Caller, tell: Any) -> None:
    for n in range(5):
        await tell(alice, "due", f"Due today: task {n}", data={"note_id": n + 1})
    await tell(bob, "share", "alice shared the project Garden with you", data={"project_id": 1})

    first = await fable.call("list_notifications", {"limit": 2}, alice)
    assert [i["title"] for i in first["items"]] == ["Due today: task 4", "Due today: task 3"]
    assert first["unread"] == 5 and first["next_cursor"]
    item = first["items"][0]
    assert item["kind"] == "due" and item["data"] == {"note_id": 5} and item["read"] is False
    assert "body" not in item  # empty: left out
    second = await fable.call("list_notifications", {"limit": 2, "cursor": first["next_cursor"]}, alice)
    assert [i["title"] for i in second["items"]] == ["Due today: task 2", "Due today: task 1"]
    assert "unread" not in second  # only the first page counts
    last = await fable.call("list_notifications", {"limit": 2, "cursor": second["next_cursor"]}, alice)
    assert [i["title"] for i in last["items"]] == ["Due today: task 0"] and last["next_cursor"] is None
    bobs = await fable.call("list_notifications", {}, bob)
    assert [i["kind"] for i in bobs["items"]] == ["share"] and bobs["unread"] == 1


async def test_marking_read_changes_only_the_callers_own_and_says_what_is_left(
        fable: Fable, alice: Caller, bob: Caller, tell: Any) -> None:
    await tell(alice, "due", "Due today: a")
    await tell(alice, "due", "Due today: b")
    await tell(bob, "due", "Due today: c")
    ids = [row[0] for row in await _states(fable)]

    marked = await fable.call("mark_notifications_read", {"ids": [ids[0], ids[2], 999]}, alice)
    assert marked == {"marked": 1, "unread": 1}  # bob's and an unknown id: ignored alike
    again = await fable.call("mark_notifications_read", {"ids": [ids[0]]}, alice)
    assert again == {"marked": 0, "unread": 1}  # idempotent
    assert (await fable.call("count_notifications", {}, bob)) == {"unread": 1}
    unread = await fable.call("list_notifications", {"unread_only": True}, alice)
    assert [i["title"] for i in unread["items"]] == ["Due today: b"]
    everything = await fable.call("mark_all_notifications_read", {}, alice)
    assert everything == {"marked": 1, "unread": 0}
    states = await _states(fable)
    assert [read is not None for _, _, read in states] == [True, True, False]  # bob's untouched


@pytest.mark.parametrize(("tool", "arguments", "field"), [
    ("mark_notifications_read", {"ids": []}, "ids"),
    ("mark_notifications_read", {"ids": [0]}, "ids.0"),
    ("mark_notifications_read", {"ids": ["x"]}, "ids.0"),
    ("mark_notifications_read", {"ids": list(range(1, 202))}, "ids"),
    ("mark_notifications_read", {}, "ids"),
    ("mark_all_notifications_read", {"every": True}, "every"),
    ("list_notifications", {"limit": 0}, "limit"),
    ("list_notifications", {"limit": 101}, "limit"),
    ("list_notifications", {"cursor": "not-a-cursor"}, "cursor"),
    ("list_notifications", {"unread_only": "perhaps"}, "unread_only"),
])
async def test_bad_input_is_refused_clearly_and_changes_nothing(
        fable: Fable, alice: Caller, tell: Any, tool: str, arguments: dict[str, Any], field: str) -> None:
    await tell(alice, "due", "Due today: a")
    before = await _states(fable)
    with pytest.raises(InvalidInput) as caught:
        await fable.call(tool, arguments, alice)
    assert field in caught.value.message or field in str(caught.value.to_dict())
    assert await _states(fable) == before


async def test_a_cursor_of_another_listing_is_refused(fable: Fable, alice: Caller, tell: Any) -> None:
    for n in range(3):
        await tell(alice, "due", f"Due today: {n}")
    notes = await fable.call("create_note", {"title": "x"}, alice)
    assert notes["id"]
    await fable.call("create_note", {"title": "y"}, alice)
    other = (await fable.call("list_notes", {"limit": 1}, alice))["next_cursor"]
    with pytest.raises(FableError, match="cursor is not valid"):
        await fable.call("list_notifications", {"cursor": other}, alice)


async def test_a_read_scope_credential_may_list_but_not_mark(fable: Fable, alice: Caller, tell: Any) -> None:
    await tell(alice, "due", "Due today: a")
    reader = Caller(user_id=alice.user_id, username=alice.username, scope="read")
    assert (await fable.call("count_notifications", {}, reader)) == {"unread": 1}
    with pytest.raises(FableError, match="read-only scope"):
        await fable.call("mark_all_notifications_read", {}, reader)


async def test_the_same_key_reaches_a_user_once_whoever_sends_it(fable: Fable, alice: Caller, tell: Any) -> None:
    await tell(alice, "due", "Due today: a", key="due:1:2026-12-05")
    await tell(alice, "due", "Due today: a", key="due:1:2026-12-05")
    await tell(alice, "due", "Due today: a", key="due:1:2026-12-06")
    assert (await fable.call("count_notifications", {}, alice)) == {"unread": 2}
