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


async def _logged(call, project: str | None, title: str, *entries: tuple[str, int], as_=None) -> dict:
    """A task (in ``project`` when given) with work logged: (ISO day, minutes) per entry."""
    task = await call("create_note", title=title, status="todo", project=project, as_=as_) if project else \
        await call("create_note", title=title, status="todo", as_=as_)
    for day, minutes in entries:
        await call("log_work", note_id=task["id"], minutes=minutes, work_date=day, as_=as_)
    return task


async def test_work_report_totals_by_project_with_top_tasks_and_by_day(call, fable, alice) -> None:
    from fable_core.db.models import Project

    async with fable.db.transaction() as session:
        session.add_all([Project(user_id=alice.user_id, title=title) for title in ("Website", "Taxes")])
    design = await _logged(call, "Website", "Design", ("2026-11-02", 60), ("2026-11-03", 30))
    await _logged(call, "Website", "Copy", ("2026-11-03", 20))
    await _logged(call, "Website", "Hosting", ("2026-11-04", 5))
    await _logged(call, "Taxes", "Receipts", ("2026-11-02", 25), ("2026-10-30", 500))   # before the range
    chores = await _logged(call, None, "Chores", ("2026-11-08", 15))

    report = await call("work_report", start="2026-11-02", end="2026-11-08", top=2)
    assert (report["start"], report["end"], report["total_minutes"]) == ("2026-11-02", "2026-11-08", 155)
    website, taxes, none = report["projects"]
    assert (website["title"], website["minutes"], website["task_count"]) == ("Website", 115, 3)
    assert website["tasks"] == [{"id": design["id"], "title": "Design", "minutes": 90},
                                {"id": website["tasks"][1]["id"], "title": "Copy", "minutes": 20}]
    assert (taxes["title"], taxes["minutes"], [t["title"] for t in taxes["tasks"]]) == ("Taxes", 25, ["Receipts"])
    assert none == {"title": "(no project)", "minutes": 15, "task_count": 1,
                    "tasks": [{"id": chores["id"], "title": "Chores", "minutes": 15}]}   # no id, never a null
    assert report["days"] == [{"day": "2026-11-02", "minutes": 85}, {"day": "2026-11-03", "minutes": 50},
                              {"day": "2026-11-04", "minutes": 5}, {"day": "2026-11-08", "minutes": 15}]
    only = await call("work_report", start="2026-10-01", end="2026-11-30", project="taxes")
    assert only["total_minutes"] == 525 and [p["title"] for p in only["projects"]] == ["Taxes"]
    assert [d["day"] for d in only["days"]] == ["2026-10-30", "2026-11-02"]


async def test_work_report_defaults_to_this_week_so_far_in_the_user_timezone(call, alice, bob, set_setting) -> None:
    from datetime import date, timedelta

    await set_setting(alice, "timezone", "Pacific/Kiritimati")
    today = date.fromisoformat((await call("list_tasks", groups=["today"]))["today"])
    monday = today - timedelta(days=today.weekday())
    await _logged(call, None, "This week", (str(monday), 10), (str(today), 20))
    await _logged(call, None, "Last week", (str(monday - timedelta(days=1)), 40))
    await _logged(call, None, "Bob's", (str(today), 99), as_=bob)
    report = await call("work_report")
    assert (report["start"], report["end"], report["timezone"]) == (str(monday), str(today), "Pacific/Kiritimati")
    assert report["total_minutes"] == 30 and [t["title"] for t in report["projects"][0]["tasks"]] == ["This week"]
    since = await call("work_report", start=str(monday - timedelta(days=7)))
    assert since["end"] == str(today) and since["total_minutes"] == 70
    empty = await call("work_report", as_=bob, start="2020-01-01", end="2020-01-31")
    assert (empty["total_minutes"], empty["projects"], empty["days"]) == (0, [], [])


async def test_work_report_refuses_bad_ranges_in_words(call, fails, snapshot) -> None:
    before = await snapshot()
    err = await fails(call("work_report", start="2026-11-09", end="2026-11-02"), InvalidInput)
    assert err.message == "start 2026-11-09 is after end 2026-11-02"
    err = await fails(call("work_report", start="2024-12-31", end="2026-01-01"), InvalidInput)
    assert err.message == "a report covers at most 366 days; 2024-12-31 to 2026-01-01 is 367 days"
    assert (await call("work_report", start="2025-01-01", end="2026-01-01"))["total_minutes"] == 0
    for args in ({"start": "last monday"}, {"top": 0}, {"top": 51}, {"end": "2026-02-30"}, {"since": "2026-01-01"}):
        await fails(call("work_report", **args), InvalidInput)
    await fails(call("work_report", project_id=999), NotFound)
    await fails(call("work_report", project="nothing like it"), NotFound)
    assert await snapshot() == before
