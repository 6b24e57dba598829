"""Due-task reminders and retention: today in each user's own time zone, from 8 o'clock their time, once per
task and day however often (or however concurrently) the job runs."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert

from fable_core.db.models import Notification, Setting
from fable_core.people.notifications.notify import add_notifications
from fable_core.people.notifications.reminders import remind_due
from fable_core.people.notifications.retention import prune
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.jobs import run_job

EVENING_UTC = datetime(2026, 12, 5, 20, 0, tzinfo=UTC)  # Tokyo (UTC+9): 05:00 on the 6th


async def _zone(fable: Fable, caller: Caller, zone: str) -> None:
    async with fable.db.transaction() as session:
        await session.execute(insert(Setting).values(user_id=caller.user_id, key="timezone", value=zone))


async def _task(fable: Fable, caller: Caller, title: str, due: date, status: str = "todo") -> int:
    return (await fable.call("create_note", {"title": title, "status": status, "due_date": due.isoformat()},
                             caller))["id"]


async def _reminders(fable: Fable) -> list[tuple[Any, ...]]:
    async with fable.db.reading() as session:
        return [tuple(r) for r in await session.execute(
            select(Notification.user_id, Notification.title, Notification.data, Notification.key)
            .order_by(Notification.id))]


async def test_due_today_in_tokyo_is_not_due_today_in_utc(fable: Fable, alice: Caller, bob: Caller) -> None:
    await _zone(fable, alice, "Asia/Tokyo")
    tokyo_task = await _task(fable, alice, "Buy mochi", date(2026, 12, 6))
    await _task(fable, bob, "Same day, in UTC", date(2026, 12, 6))
    await _task(fable, alice, "Already yesterday for alice", date(2026, 12, 5))
    bob_today = await _task(fable, bob, "Bob's today", date(2026, 12, 5))

    # 20:00 UTC: bob (UTC) is on the 5th after 8; alice in Tokyo is on the 6th, but it is 05:00 there
    assert await remind_due(fable.db, EVENING_UTC) == 1
    assert await _reminders(fable) == [(bob.user_id, "Due today: Bob's today", {"note_id": bob_today},
                                        f"due:{bob_today}:2026-12-05")]
    # 23:30 UTC is 08:30 on the 6th in Tokyo: now alice's task is due, bob's of the 6th is not
    assert await remind_due(fable.db, datetime(2026, 12, 5, 23, 30, tzinfo=UTC)) == 1
    assert (await _reminders(fable))[-1] == (alice.user_id, "Due today: Buy mochi", {"note_id": tokyo_task},
                                             f"due:{tokyo_task}:2026-12-06")


async def test_only_open_tasks_are_reminded_and_an_unknown_zone_counts_as_utc(
        fable: Fable, alice: Caller) -> None:
    await _zone(fable, alice, "Mars/Olympus_Mons")
    day = EVENING_UTC.date()
    await _task(fable, alice, "Open", day)
    await _task(fable, alice, "Started", day, "in_progress")
    await _task(fable, alice, "Finished", day, "done")
    await _task(fable, alice, "Dropped", day, "cancelled")
    await fable.call("create_note", {"title": "A note, not a task"}, alice)
    assert await remind_due(fable.db, EVENING_UTC) == 2
    assert sorted(title for _, title, _, _ in await _reminders(fable)) == ["Due today: Open", "Due today: Started"]


async def test_an_assigned_task_reminds_its_assignee_not_its_owner(
        fable: Fable, alice: Caller, bob: Caller) -> None:
    home = await fable.call("create_project", {"title": "Home"}, alice)
    await fable.call("share", {"project_id": home["id"], "with_user": "bob", "permission": "editor"}, alice)
    day = EVENING_UTC.date()
    bins = (await fable.call("create_note", {"title": "Bins", "due_date": day.isoformat(), "project_id": home["id"],
                                             "assignee": "bob"}, alice))["id"]
    assert await remind_due(fable.db, EVENING_UTC) == 1
    reminded = (await _reminders(fable))[-1:]
    assert reminded == [(bob.user_id, "Due today: Bins", {"note_id": bins}, f"due:{bins}:{day}")]


async def test_running_twice_or_at_once_reminds_once(fable: Fable, alice: Caller, bob: Caller) -> None:
    await _zone(fable, alice, "Asia/Tokyo")
    now = datetime.now(UTC)
    await _task(fable, alice, "Alice's", now.astimezone(ZoneInfo("Asia/Tokyo")).date())
    await _task(fable, bob, "Bob's", now.date())
    ran = await asyncio.gather(run_job(fable, "due_reminders"), run_job(fable, "due_reminders"),
                               remind_due(fable.db), remind_due(fable.db))
    assert True in ran[:2]  # one job run held the lock (the other may have skipped or run after it)
    await run_job(fable, "due_reminders")
    expected = {user for user, at in ((alice.user_id, "Asia/Tokyo"), (bob.user_id, "UTC"))
                if now.astimezone(ZoneInfo(at)).hour >= 8}
    assert {user for user, *_ in await _reminders(fable)} == expected
    assert len(await _reminders(fable)) == len(expected)


async def test_old_notifications_are_pruned_read_ones_sooner(fable: Fable, alice: Caller) -> None:
    async with fable.db.transaction() as session:
        for title in ("recent", "read, 100 days", "unread, 100 days", "unread, 400 days"):
            await add_notifications(session, [alice.user_id], "due", title)
    now = datetime.now(UTC)
    ages = {"read, 100 days": 100, "unread, 100 days": 100, "unread, 400 days": 400}
    async with fable.db.transaction() as session:
        for title, days in ages.items():
            await session.execute(update(Notification).where(Notification.title == title).values(
                created_at=now - timedelta(days=days), read_at=now if title.startswith("read") else None))
    assert await prune(fable.db) == 2
    assert sorted(title for _, title, _, _ in await _reminders(fable)) == ["recent", "unread, 100 days"]
