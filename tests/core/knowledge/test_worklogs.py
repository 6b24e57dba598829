from __future__ import annotations

from datetime import UTC, datetime

from fable_core.errors import InvalidInput, NotFound


async def test_log_work_defaults_to_today_and_lists_with_total(call) -> None:
    task = await call("create_note", title="Refactor", status="in_progress")
    first = await call("log_work", note_id=task["id"], minutes=45, description="  extract module ")
    await call("log_work", note_id=task["id"], minutes=30, work_date="2026-11-20")

    assert first["work_date"] == str(datetime.now(UTC).date())
    assert first["description"] == "extract module" and first["note_id"] == task["id"]
    logs = await call("list_work_logs", note_id=task["id"])
    assert logs["total_minutes"] == 75 and logs["count"] == 2
    assert [log["minutes"] for log in logs["items"]] == [45, 30]  # most recent day first


async def test_log_work_uses_the_user_timezone_for_today(call, alice, set_setting) -> None:
    await set_setting(alice, "timezone", "Pacific/Kiritimati")
    task = await call("create_note", title="Late night", status="todo")
    log = await call("log_work", note_id=task["id"], minutes=5)
    agenda = await call("list_tasks", groups=["today"])
    assert log["work_date"] == agenda["today"]


async def test_list_work_logs_pages_with_totals_of_all(call) -> None:
    task = await call("create_note", title="Long job", status="todo")
    made = [(await call("log_work", note_id=task["id"], minutes=10 + i, work_date=f"2026-11-{1 + i % 3:02d}"))["id"]
            for i in range(5)]
    seen: list[int] = []
    cursor = None
    while True:
        page = await call("list_work_logs", note_id=task["id"], limit=2, cursor=cursor)
        assert page["total_minutes"] == sum(range(10, 15)) and page["count"] == 5
        seen += [log["id"] for log in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(made) and len(set(seen)) == 5


async def test_delete_work_log(call, fails) -> None:
    task = await call("create_note", title="Job", status="todo")
    log = await call("log_work", note_id=task["id"], minutes=15)
    assert (await call("delete_work_log", log_id=log["id"]))["id"] == log["id"]
    assert (await call("list_work_logs", note_id=task["id"]))["count"] == 0
    await fails(call("delete_work_log", log_id=log["id"]), NotFound)


async def test_work_logs_go_with_their_task(call, fails) -> None:
    task = await call("create_note", title="Job", status="todo")
    log = await call("log_work", note_id=task["id"], minutes=15)
    await call("delete_note", note_id=task["id"])
    await fails(call("delete_work_log", log_id=log["id"]), NotFound)


async def test_log_work_refuses_bad_input_and_writes_nothing(call, fails, snapshot) -> None:
    task = await call("create_note", title="Job", status="todo")
    note = await call("create_note", title="Not a task")
    before = await snapshot()
    for args in ({"minutes": 0}, {"minutes": 1441}, {"minutes": "lots"}, {},
                 {"minutes": 5, "work_date": "2026-13-01"}, {"minutes": 5, "description": "x" * 10_001},
                 {"minutes": 5, "hours": 1}):
        await fails(call("log_work", note_id=task["id"], **args), InvalidInput)
    await fails(call("log_work", note_id=note["id"], minutes=5), InvalidInput)
    await fails(call("log_work", note_id=99999, minutes=5), NotFound)
    await fails(call("list_work_logs", note_id=task["id"], cursor="not-ours"), InvalidInput)
    assert await snapshot() == before
