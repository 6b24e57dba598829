from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from fable_core.errors import InvalidInput, NotFound


def _today() -> date:
    return datetime.now(UTC).date()


def _ids(agenda: dict, group: str) -> list[int]:
    return [t["id"] for g in agenda["groups"] if g["name"] == group for t in g["items"]]


def _group(agenda: dict, name: str) -> dict:
    return next(g for g in agenda["groups"] if g["name"] == name)


async def test_list_tasks_groups_by_due_date(call) -> None:
    today = _today()
    overdue = await call("create_note", title="Overdue", due_date=str(today - timedelta(days=3)))
    due_today = await call("create_note", title="Due today", due_date=str(today), status="in_progress")
    upcoming = await call("create_note", title="Upcoming", due_date=str(today + timedelta(days=5)))
    undated = await call("create_note", title="Someday", status="todo")
    done = await call("create_note", title="Finished", status="todo")
    await call("complete_task", note_id=done["id"])
    await call("create_note", title="Dropped", status="cancelled", due_date=str(today))
    await call("create_note", title="Just a note")

    agenda = await call("list_tasks")

    assert agenda["today"] == str(today) and agenda["timezone"] == "UTC"
    assert [g["name"] for g in agenda["groups"]] == ["overdue", "today", "upcoming", "no_date", "recently_done"]
    assert _ids(agenda, "overdue") == [overdue["id"]]
    assert _ids(agenda, "today") == [due_today["id"]]
    assert _ids(agenda, "upcoming") == [upcoming["id"]]
    assert _ids(agenda, "no_date") == [undated["id"]]
    assert _ids(agenda, "recently_done") == [done["id"]]
    assert [g["count"] for g in agenda["groups"]] == [1, 1, 1, 1, 1]


async def test_list_tasks_today_follows_the_user_timezone(call, alice, bob, set_setting) -> None:
    utc_today = _today()
    # UTC+14 and UTC-12 are 26 hours apart: at any moment one of them is not on UTC's date.
    zone = next(z for z in ("Pacific/Kiritimati", "Etc/GMT+12")
                if datetime.now(ZoneInfo(z)).date() != utc_today)
    local_today = datetime.now(ZoneInfo(zone)).date()
    await set_setting(alice, "timezone", zone)
    task = await call("create_note", title="Local today", due_date=str(local_today))
    await call("create_note", title="Bob local", due_date=str(local_today), as_=bob)

    agenda = await call("list_tasks")
    bobs = await call("list_tasks", as_=bob)

    assert agenda["timezone"] == zone and agenda["today"] == str(local_today)
    assert _ids(agenda, "today") == [task["id"]]
    assert bobs["timezone"] == "UTC" and bobs["today"] == str(utc_today)
    assert "today" not in [g["name"] for g in bobs["groups"]]  # an empty group is left out


async def test_list_tasks_falls_back_to_utc_for_an_unknown_timezone(call, alice, set_setting) -> None:
    await set_setting(alice, "timezone", "Mars/Olympus_Mons")
    agenda = await call("list_tasks")
    assert agenda["timezone"] == "UTC" and agenda["today"] == str(_today())


async def test_list_tasks_filters_by_project_tag_and_priority(call) -> None:
    project = await call("create_project", title="Garden")
    in_project = await call("create_note", title="Plant roses", project="garden", status="todo")
    tagged = await call("create_note", title="Fix bike", tags=["home/repairs"], priority="high")
    other = await call("create_note", title="Call mum", tags=["homework"], priority="low")

    by_id = await call("list_tasks", project_id=project["id"])
    by_name = await call("list_tasks", project="Garden")
    by_tag = await call("list_tasks", tag="home")
    by_priority = await call("list_tasks", priority=["high", "medium"])

    assert _ids(by_id, "no_date") == _ids(by_name, "no_date") == [in_project["id"]]
    assert _ids(by_tag, "no_date") == [tagged["id"]]
    assert _ids(by_priority, "no_date") == [tagged["id"]]
    assert other["id"] not in _ids(by_tag, "no_date")


async def test_list_tasks_pages_one_group_without_gaps_or_repeats(call) -> None:
    start = _today() - timedelta(days=30)
    made = [(await call("create_note", title=f"Late {i}", due_date=str(start + timedelta(days=i % 3))))["id"]
            for i in range(7)]
    await call("create_note", title="Tomorrow", due_date=str(_today() + timedelta(days=1)))

    first = await call("list_tasks", limit=3)
    seen = _ids(first, "overdue")
    cursor = _group(first, "overdue")["next_cursor"]
    while cursor:
        page = await call("list_tasks", limit=3, cursor=cursor)
        assert [g["name"] for g in page["groups"]] == ["overdue"]
        assert page["groups"][0]["count"] == 7
        seen += _ids(page, "overdue")
        cursor = page["groups"][0]["next_cursor"]

    assert sorted(seen) == sorted(made) and len(seen) == len(set(seen)) == 7
    dues = {t["id"]: t["due_date"] for t in (await call("list_notes", kind="task", limit=50))["items"]}
    assert [dues[i] for i in seen] == sorted(dues[i] for i in seen)


async def test_list_tasks_only_requested_groups(call) -> None:
    await call("create_note", title="Due today", due_date=str(_today()))
    await call("create_note", title="Pay the plumber", due_date=str(_today() - timedelta(days=3)))
    await call("create_note", title="Book flights", due_date=str(_today() + timedelta(days=3)))
    agenda = await call("list_tasks", groups=["today", "overdue"])
    assert [g["name"] for g in agenda["groups"]] == ["today", "overdue"]


async def test_list_tasks_leaves_empty_groups_out(call) -> None:
    await call("create_note", title="Someday", status="todo")
    agenda = await call("list_tasks")
    assert [(g["name"], g["count"]) for g in agenda["groups"]] == [("no_date", 1)]
    assert (await call("list_tasks", groups=["today"]))["groups"] == []


@pytest.mark.parametrize("cursor", ["garbage!", "eyJrIjoibm90ZXM6dXBkYXRlZCIsInAiOltdfQ"])
async def test_list_tasks_refuses_a_bad_cursor(call, fails, cursor) -> None:
    err = await fails(call("list_tasks", cursor=cursor), InvalidInput)
    assert err.details["field"] == "cursor"


async def test_list_tasks_unknown_project_is_not_found(call, fails) -> None:
    await fails(call("list_tasks", project_id=999), NotFound)
    await fails(call("list_tasks", project="nothing like it"), NotFound)


# --- completion and recurrence ----------------------------------------------------------------


async def test_complete_task_stamps_it_done(call) -> None:
    task = await call("create_note", title="Write report", status="todo")
    done = await call("complete_task", note_id=task["id"])
    assert done["task"]["status"] == "done" and done["next_occurrence"] is None
    again = await call("complete_task", note_id=task["id"])
    assert again["task"]["version"] == done["task"]["version"]
    read = await call("read_note", note_id=task["id"])
    assert read["completed_at"] is not None


@pytest.mark.parametrize(
    ("rule", "due", "expected"),
    [
        ("FREQ=WEEKLY;BYDAY=MO,TH", "2026-11-30", "2026-12-03"),  # Monday → Thursday
        ("FREQ=WEEKLY;BYDAY=MO,TH", "2026-12-03", "2026-12-07"),  # Thursday → next Monday
        ("FREQ=MONTHLY", "2026-01-15", "2026-02-15"),
        ("FREQ=MONTHLY;BYMONTHDAY=-1", "2026-01-31", "2026-02-28"),
        ("FREQ=DAILY;INTERVAL=2", "2026-12-30", "2027-01-01"),
        ("FREQ=YEARLY", "2028-02-29", "2032-02-29"),
        ("FREQ=DAILY;UNTIL=20261231T000000Z", "2026-12-30", "2026-12-31"),
    ],
)
async def test_completing_a_recurring_task_creates_the_next_occurrence(call, rule, due, expected) -> None:
    task = await call("create_note", title="Water plants", due_date=due, recurrence_rule=rule,
                      tags=["home"], priority="medium")
    result = await call("complete_task", note_id=task["id"])
    following = result["next_occurrence"]
    assert following["due_date"] == expected
    assert following["status"] == "todo" and following["title"] == "Water plants"
    assert following["tags"] == ["home"] and following["priority"] == "medium"
    assert following["recurrence_rule"] == task["recurrence_rule"]
    assert result["task"]["recurrence_rule"] is None  # the rule moved on with the series
    again = await call("complete_task", note_id=task["id"])
    assert again["next_occurrence"] is None
    assert len((await call("list_notes", kind="task"))["items"]) == 2


@pytest.mark.parametrize("rule", ["FREQ=DAILY;UNTIL=20261201", "FREQ=WEEKLY;COUNT=1"])
async def test_recurrence_that_has_ended_creates_nothing(call, rule) -> None:
    task = await call("create_note", title="Last one", due_date="2026-12-01", recurrence_rule=rule)
    result = await call("complete_task", note_id=task["id"])
    assert result["next_occurrence"] is None
    assert len((await call("list_notes"))["items"]) == 1


async def test_a_count_limited_series_ends_after_count_occurrences(call) -> None:
    task = await call("create_note", title="Three times", due_date="2026-12-01",
                      recurrence_rule="FREQ=DAILY;COUNT=3")
    dues = [task["due_date"]]
    while task is not None:
        task = (await call("complete_task", note_id=task["id"]))["next_occurrence"]
        if task:
            dues.append(task["due_date"])
    assert dues == ["2026-12-01", "2026-12-02", "2026-12-03"]


async def test_update_note_status_done_also_recurs(call) -> None:
    task = await call("create_note", title="Weekly review", due_date="2026-12-04",
                      recurrence_rule="FREQ=WEEKLY")
    await call("update_note", note_id=task["id"], status="done")
    open_ = await call("list_notes", kind="task", status=["todo"])
    assert [t["due_date"] for t in open_["items"]] == ["2026-12-11"]


async def test_complete_task_refuses_a_plain_note(call, fails, snapshot) -> None:
    note = await call("create_note", title="Idea")
    before = await snapshot()
    await fails(call("complete_task", note_id=note["id"]), InvalidInput)
    assert await snapshot() == before


# --- rescheduling -----------------------------------------------------------------------------


async def test_reschedule_keeps_the_recurrence(call) -> None:
    task = await call("create_note", title="Pay rent", due_date="2026-12-01",
                      recurrence_rule="FREQ=MONTHLY")
    moved = await call("reschedule_task", note_id=task["id"], due_date="2026-12-05")
    assert moved["due_date"] == "2026-12-05" and moved["recurrence_rule"] == "FREQ=MONTHLY"
    assert moved["version"] == task["version"] + 1
    result = await call("complete_task", note_id=task["id"])
    assert result["next_occurrence"]["due_date"] == "2027-01-05"


async def test_reschedule_to_the_same_date_keeps_no_new_version(call) -> None:
    task = await call("create_note", title="Same day", due_date="2026-12-01")
    same = await call("reschedule_task", note_id=task["id"], due_date="2026-12-01")
    assert same["version"] == task["version"]


async def test_reschedule_refuses_notes_finished_tasks_and_bad_dates(call, fails, snapshot) -> None:
    note = await call("create_note", title="Plain")
    done = await call("create_note", title="Done already", status="done")
    task = await call("create_note", title="Open", status="todo")
    before = await snapshot()
    await fails(call("reschedule_task", note_id=note["id"], due_date="2026-12-01"), InvalidInput)
    await fails(call("reschedule_task", note_id=done["id"], due_date="2026-12-01"), InvalidInput)
    await fails(call("reschedule_task", note_id=task["id"], due_date="2026-02-30"), InvalidInput)
    await fails(call("reschedule_task", note_id=task["id"], due_date="tomorrow"), InvalidInput)
    await fails(call("reschedule_task", note_id=task["id"]), InvalidInput)
    assert await snapshot() == before
