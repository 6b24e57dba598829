"""Task assignees: who may be assigned, what results say, and whose agenda shows a task."""

from __future__ import annotations

from datetime import UTC, datetime

from support.users import quick_user

from fable_core.errors import InvalidInput, NotFound

carol = quick_user("carol")


def _today() -> str:
    return datetime.now(UTC).date().isoformat()


def _agenda_ids(agenda: dict) -> set[int]:
    return {t["id"] for g in agenda["groups"] for t in g["items"]}


async def _household(call, alice, bob) -> dict:
    """Alice's project "Home", shared with Bob as editor."""
    project = await call("create_project", title="Home")
    await call("share", project_id=project["id"], with_user=bob.username, permission="editor")
    return project


async def test_a_task_assigned_to_the_other_leaves_my_agenda_for_theirs(call, alice, bob) -> None:
    project = await _household(call, alice, bob)
    dishes = await call("create_note", title="Dishes", due_date=_today(), project_id=project["id"],
                        assignee=bob.username)
    laundry = await call("create_note", title="Laundry", due_date=_today(), project_id=project["id"], assignee="me")
    shared = await call("create_note", title="Groceries", due_date=_today(), project_id=project["id"])

    assert dishes["assignee"] == "bob" and laundry["assignee"] == "alice"
    assert "assignee" not in shared  # no nulls in results
    mine, bobs = await call("list_tasks"), await call("list_tasks", as_=bob)
    assert _agenda_ids(mine) == {laundry["id"], shared["id"]}
    assert _agenda_ids(bobs) == {dishes["id"], shared["id"]}
    today = next(g for g in bobs["groups"] if g["name"] == "today")
    assert {t["title"]: t.get("assignee") for t in today["items"]} == {"Dishes": "bob", "Groceries": None}

    everyone = await call("list_tasks", assignee="everyone")
    assert _agenda_ids(everyone) == {dishes["id"], laundry["id"], shared["id"]}
    assert _agenda_ids(await call("list_tasks", assignee="bob")) == {dishes["id"]}
    assert _agenda_ids(await call("list_tasks", assignee="nobody")) == {shared["id"]}
    # the board's listing: everyone's by default, "me" for mine
    board = await call("list_notes", project_id=project["id"], kind="task")
    assert {t["id"] for t in board["items"]} == {dishes["id"], laundry["id"], shared["id"]}
    mine_on_board = await call("list_notes", project_id=project["id"], kind="task", assignee="me", as_=bob)
    assert {t["id"] for t in mine_on_board["items"]} == {dishes["id"], shared["id"]}
    assert (await call("read_note", note_id=dishes["id"], as_=bob))["assignee"] == "bob"


async def test_reassigning_and_clearing_go_through_update_note(call, alice, bob) -> None:
    project = await _household(call, alice, bob)
    task = await call("create_note", title="Bins", status="todo", project_id=project["id"])

    taken = await call("update_note", note_id=task["id"], assignee="me", as_=bob)
    assert taken["assignee"] == "bob"
    cleared = await call("update_note", note_id=task["id"], clear=["assignee"])
    assert "assignee" not in cleared
    # a note given an assignee becomes a task, as a due date makes it one
    note = await call("create_note", title="Plan the week", project_id=project["id"])
    assert (await call("update_note", note_id=note["id"], assignee="bob"))["status"] == "todo"


async def test_a_recurring_task_keeps_its_assignee(call, alice, bob) -> None:
    project = await _household(call, alice, bob)
    task = await call("create_note", title="Water the plants", due_date=_today(), recurrence_rule="FREQ=WEEKLY",
                      project_id=project["id"], assignee="bob")
    done = await call("complete_task", note_id=task["id"], as_=bob)
    assert done["next_occurrence"]["assignee"] == "bob"


async def test_assigning_to_someone_who_cannot_edit_is_refused_and_changes_nothing(
        call, alice, bob, carol, fails, snapshot) -> None:
    project = await _household(call, alice, bob)
    await call("share", project_id=project["id"], with_user=carol.username, permission="viewer")
    private = await call("create_note", title="Alice's own", status="todo")
    task = await call("create_note", title="Vacuum", status="todo", project_id=project["id"], assignee="bob")
    before = await snapshot()

    viewer = await fails(call("update_note", note_id=task["id"], assignee="carol"), InvalidInput)
    assert "carol" in viewer.message and viewer.details["field"] == "assignee"
    outsider = await fails(call("update_note", note_id=private["id"], assignee="bob"), InvalidInput)
    assert "bob" in outsider.message
    unknown = await fails(call("update_note", note_id=task["id"], assignee="nosuchuser"), NotFound)
    assert "nosuchuser" in unknown.message
    await fails(call("create_note", title="Mop", status="todo", project_id=project["id"], assignee="carol"),
                InvalidInput)
    await fails(call("create_note", title="Mop", status="todo", assignee="nosuchuser"), NotFound)
    await fails(call("list_tasks", assignee="nosuchuser"), NotFound)

    assert await snapshot() == before
    assert (await call("read_note", note_id=task["id"]))["assignee"] == "bob"


async def test_a_task_moved_out_of_its_assignees_reach_is_nobodys(call, alice, bob) -> None:
    project = await _household(call, alice, bob)
    other = await call("create_project", title="Work")
    task = await call("create_note", title="Tax return", status="todo", project_id=project["id"], assignee="bob")

    moved = await call("update_note", note_id=task["id"], project_id=other["id"])

    assert "assignee" not in moved
    assert task["id"] in _agenda_ids(await call("list_tasks"))


async def test_a_revoked_or_lowered_share_unassigns_the_tasks_its_grantee_can_no_longer_do(call, alice, bob) -> None:
    project = await _household(call, alice, bob)
    kept = await call("create_note", title="Mine to do", status="todo", project_id=project["id"], assignee="me")
    lowered = await call("create_note", title="Paint the fence", status="todo", project_id=project["id"],
                         assignee="bob")

    await call("share", project_id=project["id"], with_user="bob", permission="viewer")
    assert "assignee" not in await call("read_note", note_id=lowered["id"])
    assert (await call("read_note", note_id=kept["id"]))["assignee"] == "alice"

    share = (await call("share", project_id=project["id"], with_user="bob", permission="editor"))["id"]
    await call("update_note", note_id=lowered["id"], assignee="bob")
    await call("unshare", share_id=share, as_=bob)  # bob leaves
    assert "assignee" not in await call("read_note", note_id=lowered["id"])
    assert lowered["id"] in _agenda_ids(await call("list_tasks"))  # back on alice's agenda


async def test_search_hits_say_who_a_task_is_assigned_to_as_listings_do(call, alice, bob) -> None:
    project = await _household(call, alice, bob)
    await call("create_note", title="Dishes tonight", project_id=project["id"], assignee=bob.username)
    await call("create_note", title="Dishes tomorrow", project_id=project["id"], status="todo")

    hits = (await call("search_notes", query="dishes"))["items"]
    assert {h["title"]: h.get("assignee") for h in hits} == {"Dishes tonight": "bob", "Dishes tomorrow": None}
    bobs = (await call("search_notes", query="dishes tonight", as_=bob))["items"]
    assert [(h["title"], h["assignee"], h["owner"], h["permission"]) for h in bobs] == [
        ("Dishes tonight", "bob", "alice", "editor")]
