from __future__ import annotations

from fable_core.errors import Conflict, InvalidInput, NotFound


async def test_milestones_are_created_in_order_and_updated(call) -> None:
    project = await call("create_project", title="Launch")
    first = await call("create_milestone", project="launch", title="Beta", due_date="2027-01-15")
    second = await call("create_milestone", project_id=project["id"], title="GA")
    assert (first["order_index"], second["order_index"]) == (0, 1)
    assert first["project_id"] == project["id"] and first["status"] == "open"

    changed = await call("update_milestone", milestone_id=first["id"], status="done", title="Public beta")
    assert changed["status"] == "done" and changed["title"] == "Public beta"
    assert changed["due_date"] == "2027-01-15"
    cleared = await call("update_milestone", milestone_id=first["id"], clear=["due_date"])
    assert cleared["due_date"] is None


async def test_milestone_titles_are_unique_within_a_project(call, fails, snapshot) -> None:
    one = await call("create_project", title="One")
    two = await call("create_project", title="Two")
    await call("create_milestone", project_id=one["id"], title="Design")
    other = await call("create_milestone", project_id=one["id"], title="Build")
    await call("create_milestone", project_id=two["id"], title="design")  # other project: fine
    before = await snapshot()
    await fails(call("create_milestone", project_id=one["id"], title="DESIGN"), Conflict)
    await fails(call("update_milestone", milestone_id=other["id"], title="design"), Conflict)
    assert await snapshot() == before


async def test_list_milestones_pages_in_order_with_counts(call) -> None:
    project = await call("create_project", title="Big")
    made = [(await call("create_milestone", project_id=project["id"], title=f"Stage {i}"))["id"]
            for i in range(5)]
    await call("create_note", title="Work", milestone_id=made[0], status="todo")
    seen: list[dict] = []
    cursor = None
    while True:
        page = await call("list_milestones", project_id=project["id"], limit=2, cursor=cursor)
        seen += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert [m["id"] for m in seen] == made
    assert seen[0]["task_counts"]["todo"] == 1
    done_only = await call("list_milestones", project="big", status=["done"])
    assert done_only["items"] == []


async def test_reorder_milestones(call, fails, snapshot) -> None:
    project = await call("create_project", title="Ordered")
    a, b, c = [(await call("create_milestone", project_id=project["id"], title=t))["id"] for t in "ABC"]
    page = await call("reorder_milestones", project_id=project["id"], milestone_ids=[c, a, b])
    assert [(m["id"], m["order_index"]) for m in page["items"]] == [(c, 0), (a, 1), (b, 2)]
    listed = await call("list_milestones", project_id=project["id"])
    assert [m["id"] for m in listed["items"]] == [c, a, b]
    late = await call("create_milestone", project_id=project["id"], title="D")
    assert late["order_index"] == 3

    other = await call("create_project", title="Other")
    foreign = (await call("create_milestone", project_id=other["id"], title="X"))["id"]
    before = await snapshot()
    for ids in ([a, b], [a, b, c, late["id"], a], [a, b, c, late["id"], foreign], [a, b, c, 99999]):
        err = await fails(call("reorder_milestones", project_id=project["id"], milestone_ids=ids),
                          InvalidInput)
        assert err.details["field"] == "milestone_ids"
    await fails(call("reorder_milestones", project_id=project["id"], milestone_ids=[]), InvalidInput)
    assert await snapshot() == before


async def test_delete_milestone_keeps_its_tasks_in_the_project(call, fails) -> None:
    project = await call("create_project", title="P")
    milestone = await call("create_milestone", project_id=project["id"], title="M")
    task = await call("create_note", title="T", milestone_id=milestone["id"], status="todo")
    result = await call("delete_milestone", milestone_id=milestone["id"])
    assert result == {"id": milestone["id"], "deleted": True, "tasks_detached": 1}
    read = await call("read_note", note_id=task["id"])
    assert read["project_id"] == project["id"] and read["milestone_id"] is None
    await fails(call("delete_milestone", milestone_id=milestone["id"]), NotFound)


async def test_milestone_bad_input_writes_nothing(call, fails, snapshot) -> None:
    project = await call("create_project", title="P")
    milestone = await call("create_milestone", project_id=project["id"], title="M")
    before = await snapshot()
    for args in ({"title": ""}, {"title": "x" * 201}, {"title": "ok", "status": "closed"},
                 {"title": "ok", "due_date": "31/12/2026"}, {"title": "ok", "order": 3}):
        await fails(call("create_milestone", project_id=project["id"], **args), InvalidInput)
    await fails(call("create_milestone", title="No project"), InvalidInput)
    await fails(call("create_milestone", project_id=99999, title="ok"), NotFound)
    await fails(call("update_milestone", milestone_id=milestone["id"], status="finished"), InvalidInput)
    await fails(call("list_milestones", project_id=project["id"], cursor="x"), InvalidInput)
    assert await snapshot() == before
