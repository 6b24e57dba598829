from __future__ import annotations

import pytest

from fable_core.errors import Conflict, InvalidInput, NotFound


async def test_create_get_update_project(call) -> None:
    created = await call("create_project", title=" Webapp ", description="The site", goal="Launch",
                         color="#3366ff")
    assert created["title"] == "Webapp" and created["status"] == "active" and created["open_tasks"] == 0
    updated = await call("update_project", project_id=created["id"], status="completed", goal="Done")
    assert updated["status"] == "completed" and updated["goal"] == "Done"
    assert updated["description"] == "The site" and updated["color"] == "#3366ff"
    cleared = await call("update_project", project="webapp", clear=["color"])
    assert cleared["color"] is None
    got = await call("get_project", project_id=created["id"])
    assert got["title"] == "Webapp" and got["milestones"] == [] and got["milestone_count"] == 0


async def test_get_project_counts_tasks_by_status_and_shows_milestones(call) -> None:
    project = await call("create_project", title="Garden")
    first = await call("create_milestone", project_id=project["id"], title="Prepare beds")
    second = await call("create_milestone", project_id=project["id"], title="Plant")
    await call("create_note", title="Dig", project_id=project["id"], milestone_id=first["id"], status="done")
    await call("create_note", title="Compost", milestone_id=first["id"], status="todo")
    await call("create_note", title="Buy seeds", project_id=project["id"], status="in_progress")
    await call("create_note", title="Ideas", project_id=project["id"])
    await call("create_note", title="Elsewhere", status="todo")

    got = await call("get_project", project="garden")

    assert got["task_counts"] == {"todo": 1, "in_progress": 1, "done": 1, "cancelled": 0, "notes": 1}
    assert got["open_tasks"] == 2
    assert [m["id"] for m in got["milestones"]] == [first["id"], second["id"]]
    assert got["milestones"][0]["task_counts"]["done"] == 1
    assert got["milestones"][0]["task_counts"]["todo"] == 1
    assert got["milestones"][1]["task_counts"]["todo"] == 0


async def test_project_titles_are_unique_per_user_ignoring_case(call, bob, fails, snapshot) -> None:
    first = await call("create_project", title="Webapp")
    other = await call("create_project", title="Mobile")
    await call("create_project", title="webapp", as_=bob)  # another user may use it
    before = await snapshot()
    err = await fails(call("create_project", title="WEBAPP"), Conflict)
    assert err.details["existing_project_id"] == first["id"]
    await fails(call("update_project", project_id=other["id"], title="webApp"), Conflict)
    assert await snapshot() == before
    renamed = await call("update_project", project_id=first["id"], title="WebApp")  # its own title
    assert renamed["title"] == "WebApp"


async def test_list_projects_pages_by_title_with_status_filter(call) -> None:
    titles = ["delta", "Alpha", "charlie", "Bravo", "echo"]
    for t in titles:
        await call("create_project", title=t, status="archived" if t == "echo" else "active")
    seen: list[str] = []
    cursor = None
    while True:
        page = await call("list_projects", limit=2, cursor=cursor)
        seen += [p["title"] for p in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == sorted(titles, key=str.lower)
    archived = await call("list_projects", status=["archived"])
    assert [p["title"] for p in archived["items"]] == ["echo"]


async def test_list_projects_shows_open_task_counts(call) -> None:
    project = await call("create_project", title="Busy")
    for i in range(3):
        await call("create_note", title=f"Task {i}", project_id=project["id"], status="todo")
    page = await call("list_projects")
    assert page["items"][0]["open_tasks"] == 3


# --- project by name ---------------------------------------------------------------------------


@pytest.fixture
async def projects(call) -> dict[str, int]:
    made = {}
    for title in ("Website Redesign", "Kitchen Renovation", "Tax Return 2026", "Tax Planning"):
        made[title] = (await call("create_project", title=title))["id"]
    return made


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("website redesign", "Website Redesign"),  # exact, any case
        ("kitchen", "Kitchen Renovation"),  # the name inside a title
        ("my Kitchen Renovation plans", "Kitchen Renovation"),  # a title inside the name
        ("Websight Redesin", "Website Redesign"),  # fuzzy >= 0.55
        ("tax return", "Tax Return 2026"),  # one substring match among similar titles
    ],
)
async def test_project_by_name(call, projects, name, expected) -> None:
    note = await call("create_note", title=f"Note for {name}", project=name)
    assert note["project_id"] == projects[expected]


async def test_ambiguous_project_name_lists_the_candidates(call, projects, fails, snapshot) -> None:
    before = await snapshot()
    err = await fails(call("create_note", title="Receipts", project="tax"), InvalidInput)
    assert {c["title"] for c in err.details["candidates"]} == {"Tax Return 2026", "Tax Planning"}
    assert "Tax Planning" in err.message and "Tax Return 2026" in err.message
    assert await snapshot() == before


async def test_unmatched_project_name_is_not_found(call, projects, fails) -> None:
    await fails(call("create_note", title="Lost", project="Quantum Entanglement"), NotFound)
    await fails(call("get_project", project="zzzz"), NotFound)


async def test_project_id_and_name_together_are_refused(call, projects, fails) -> None:
    await fails(call("create_note", title="Both", project_id=projects["Tax Planning"],
                     project="kitchen"), InvalidInput)
    await fails(call("get_project"), InvalidInput)


# --- deleting ----------------------------------------------------------------------------------


async def _project_with_notes(call) -> tuple[dict, dict, dict, dict]:
    project = await call("create_project", title="Doomed")
    milestone = await call("create_milestone", project_id=project["id"], title="Phase 1")
    task = await call("create_note", title="Task in it", milestone_id=milestone["id"], status="todo")
    note = await call("create_note", title="Note in it", project_id=project["id"])
    await call("log_work", note_id=task["id"], minutes=10)
    return project, milestone, task, note


async def test_delete_project_detaches_its_notes_by_default(call, fails) -> None:
    project, milestone, task, note = await _project_with_notes(call)
    result = await call("delete_project", project_id=project["id"])
    assert result == {"id": project["id"], "deleted": True, "notes": "detach", "notes_detached": 2,
                      "notes_deleted": 0, "milestones_deleted": 1}
    for kept in (task, note):
        read = await call("read_note", note_id=kept["id"])
        assert read["project_id"] is None and read["milestone_id"] is None
    await fails(call("get_project", project_id=project["id"]), NotFound)
    await fails(call("update_milestone", milestone_id=milestone["id"], title="x"), NotFound)
    assert (await call("list_work_logs", note_id=task["id"]))["count"] == 1


async def test_delete_project_can_delete_its_notes(call, fails) -> None:
    project, _, task, note = await _project_with_notes(call)
    outside = await call("create_note", title="Outside")
    result = await call("delete_project", project_id=project["id"], notes="delete")
    assert result["notes_deleted"] == 2 and result["notes_detached"] == 0
    for gone in (task, note):
        await fails(call("read_note", note_id=gone["id"]), NotFound)
    assert [n["id"] for n in (await call("list_notes"))["items"]] == [outside["id"]]


async def test_delete_project_by_name_needs_the_exact_title(call, fails, snapshot) -> None:
    await call("create_project", title="Kitchen Renovation")
    before = await snapshot()
    err = await fails(call("delete_project", project="kitchen"), InvalidInput)
    assert "Kitchen Renovation" in err.message
    await fails(call("delete_project", project_id=1, notes="shred"), InvalidInput)
    assert await snapshot() == before
    assert (await call("delete_project", project="KITCHEN RENOVATION"))["deleted"] is True


async def test_project_bad_input_writes_nothing(call, fails, snapshot) -> None:
    project = await call("create_project", title="Fine")
    before = await snapshot()
    for args in ({"title": ""}, {"title": "   "}, {"title": "x" * 201}, {"title": "ok", "status": "paused"},
                 {"title": "ok", "color": "blue"}, {"title": "ok", "goal": "g" * 20_001},
                 {"title": "ok", "owner": "me"}):
        await fails(call("create_project", **args), InvalidInput)
    await fails(call("update_project", project_id=project["id"], status="done"), InvalidInput)
    await fails(call("update_project", project_id=project["id"], clear=["title"]), InvalidInput)
    await fails(call("list_projects", cursor="bad"), InvalidInput)
    await fails(call("list_projects", status=["paused"]), InvalidInput)
    assert await snapshot() == before


async def test_project_changes_are_announced_after_commit(call, fable, alice) -> None:
    from fable_core.infra.events import NoteChanged, ProjectChanged

    heard: list[object] = []
    unsubscribe = fable.events.subscribe(heard.append)
    try:
        project, _, task, note = await _project_with_notes(call)
        heard.clear()
        await call("delete_project", project_id=project["id"])
    finally:
        unsubscribe()
    assert ProjectChanged(alice.user_id, project["id"], "deleted") in heard
    assert {e.note_id for e in heard if isinstance(e, NoteChanged)} == {task["id"], note["id"]}
