"""The prep's scheduler: each user's plan from their settings, replanned live when a setting
changes, a missed prep caught up on start, and one prep per day across several processes."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from collections.abc import AsyncIterator
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import select, update
from support.fake_llm import FakeLLM, Reply

from fable_core.config import Settings
from fable_core.daily.journal.schedule import Plan, PrepScheduler, read_plans
from fable_core.db.models import JournalDay, Message, User
from fable_core.errors import InvalidInput
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

CHILD = Path(__file__).with_name("prep_child.py")
ZONES = ("UTC", "Asia/Tokyo", "America/New_York", "Pacific/Kiritimati", "Pacific/Pago_Pago")


def early_zone() -> str:
    """A zone where it is not yet 22:00: a prep at 23:59 there is still to come today."""
    now = datetime.now(UTC)
    return next(z for z in ZONES if now.astimezone(ZoneInfo(z)).hour < 22)


async def set_journal(fable: Fable, caller: Caller, **prefs: object) -> None:
    await fable.call("set_setting", {"key": "journal", "value": prefs}, caller)


async def states(fable: Fable) -> dict[int, str]:
    async with fable.db.reading() as session:
        return dict((await session.execute(select(JournalDay.user_id, JournalDay.prep_state))).all())


async def eventually(check, seconds: float = 10.0):
    """``await check()`` until it is truthy (its value), or fail after ``seconds``."""
    for _ in range(int(seconds / 0.05)):
        value = await check()
        if value:
            return value
        await asyncio.sleep(0.05)
    pytest.fail(f"{check.__name__} never held")


@pytest.fixture
async def scheduler(fable: Fable) -> AsyncIterator[PrepScheduler]:
    """A prep scheduler on the test's Fable (as ``fable serve`` installs one), started by the test."""
    found = PrepScheduler(fable)
    yield found
    await found.close()


async def test_plans_come_from_the_journal_setting_and_the_timezone_setting(
        fable: Fable, alice: Caller, bob: Caller) -> None:
    await set_journal(fable, alice, prep_time="07:30", days=["mon", "fri"], timezone="Asia/Tokyo")
    await fable.call("set_setting", {"key": "timezone", "value": "Europe/Paris"}, bob)
    plans = {p.user_id: p for p in await read_plans(fable)}
    assert plans[alice.user_id] == Plan(alice.user_id, ZoneInfo("Asia/Tokyo"), time(7, 30), ("mon", "fri"))
    assert plans[bob.user_id] == Plan(bob.user_id, ZoneInfo("Europe/Paris"), time(6, 0),
                                      ("mon", "tue", "wed", "thu", "fri", "sat", "sun"))
    await set_journal(fable, alice, days=[])
    async with fable.db.transaction() as session:
        await session.execute(update(User).where(User.id == bob.user_id).values(is_active=False))
    assert await read_plans(fable) == []


async def test_on_start_a_missed_prep_runs_once_and_a_later_or_unscheduled_one_does_not(
        fable: Fable, alice: Caller, bob: Caller, scheduler: PrepScheduler) -> None:
    await set_journal(fable, alice, prep_time="00:00")  # passed today, whatever the time
    await set_journal(fable, bob, prep_time="23:59", timezone=early_zone())
    scheduler.start()
    assert await eventually(lambda: _state_is(fable, alice, "done"))
    await scheduler.idle()
    assert await states(fable) == {alice.user_id: "done"}
    assert scheduler.next_run(bob.user_id).astimezone(ZoneInfo(early_zone())).time() == time(23, 59)
    await scheduler.replan(catch_up=True)  # a second start (a reconnect) prepares nothing twice
    await scheduler.idle()
    async with fable.db.reading() as session:
        assert await session.scalar(select(Message.id).where(Message.role == "assistant").offset(1)) is None


async def _state_is(fable: Fable, caller: Caller, state: str) -> bool:
    return (await states(fable)).get(caller.user_id) == state


async def test_a_changed_setting_reschedules_live_and_no_days_unschedules(
        fable: Fable, ai_fable: Fable, alice: Caller, bob: Caller, scheduler: PrepScheduler) -> None:
    await set_journal(fable, alice, prep_time="23:59", timezone=early_zone())
    scheduler.start()
    await eventually(lambda: _scheduled(scheduler, alice))
    await set_journal(fable, alice, prep_time="07:45", timezone="Asia/Tokyo")

    async def moved() -> bool:
        at = scheduler.next_run(alice.user_id)
        return at is not None and at.astimezone(ZoneInfo("Asia/Tokyo")).time() == time(7, 45)

    await eventually(moved, 5)
    # made by another runtime (its own pool, as another process would): heard through PostgreSQL
    await ai_fable.call("set_setting", {"key": "timezone", "value": "America/New_York"}, bob)

    async def bob_moved() -> bool:
        at = scheduler.next_run(bob.user_id)
        return at is not None and at.tzinfo == ZoneInfo("America/New_York") and at.time() == time(6, 0)

    await eventually(bob_moved, 5)
    await set_journal(fable, alice, days=[])
    await eventually(lambda: _unscheduled(scheduler, alice), 5)


async def _scheduled(scheduler: PrepScheduler, caller: Caller) -> bool:
    return scheduler.next_run(caller.user_id) is not None


async def _unscheduled(scheduler: PrepScheduler, caller: Caller) -> bool:
    return scheduler.next_run(caller.user_id) is None


async def test_the_scheduled_run_prepares_the_day_through_apscheduler(
        fable: Fable, alice: Caller, scheduler: PrepScheduler) -> None:
    await set_journal(fable, alice, prep_time="23:59", timezone=early_zone())
    scheduler.start()
    await eventually(lambda: _scheduled(scheduler, alice))
    assert await states(fable) == {}
    scheduler.fire_now(alice.user_id)
    assert await eventually(lambda: _state_is(fable, alice, "done"))
    day = await fable.call("open_journal", {}, alice)
    assert day["day"] == datetime.now(UTC).astimezone(ZoneInfo(early_zone())).date().isoformat()
    assert day["opener"]


@pytest.mark.parametrize(("value", "said"), [
    ({"prep_time": "25:00"}, "value.prep_time: Input should be in a valid time format, hour value is outside"),
    ({"timezone": "Mars/Olympus"}, "'Mars/Olympus' is not a known time zone"),
    ({"days": ["funday"]}, "value.days.0: Input should be 'mon'"),
])
async def test_a_bad_schedule_is_refused_by_the_setting_and_changes_nothing(
        fable: Fable, alice: Caller, value: dict, said: str) -> None:
    await set_journal(fable, alice, prep_time="07:00")
    with pytest.raises(InvalidInput, match=said):
        await fable.call("set_setting", {"key": "journal", "value": value}, alice)
    [plan] = await read_plans(fable)
    assert plan.at == time(7, 0) and plan.zone == ZoneInfo("UTC")


async def test_two_processes_on_one_database_prepare_a_missed_day_once(
        fable: Fable, alice: Caller, settings: Settings, journal_llm_url: str, llm: FakeLLM) -> None:
    await set_journal(fable, alice, prep_time="00:00")
    await fable.call("create_note", {"title": "Water the plants", "status": "todo",
                                     "due_date": datetime.now(UTC).date().isoformat()}, alice)
    slow = threading.Event()  # the model answers the first prep only after both processes started theirs
    llm.plain_replies.append(Reply("Good morning from the one prep.", hold=slow))
    threading.Timer(6.0, slow.set).start()
    env = {**os.environ, "DATABASE_URL": settings.database_url or "", "OLLAMA_URL": journal_llm_url,
           "LLM_PROVIDER": "ollama", "EMBED_MODEL": "fake-embed", "FABLE_DATA_DIR": str(settings.fable_data_dir),
           "FABLE_SECRET_KEY": "x" * 32}
    today = datetime.now(UTC).date().isoformat()
    children = [await asyncio.create_subprocess_exec(sys.executable, str(CHILD), str(alice.user_id), today, env=env,
                                                     stdout=asyncio.subprocess.PIPE) for _ in range(2)]
    outputs = await asyncio.wait_for(asyncio.gather(*(c.communicate() for c in children)), 90)
    assert [c.returncode for c in children] == [0, 0]
    assert [json.loads(out.decode().strip().splitlines()[-1]) for out, _ in outputs] == [{"state": "done"}] * 2
    day = await fable.call("open_journal", {}, alice)
    conversation = await fable.call("get_conversation", {"conversation_id": day["conversation_id"]}, alice)
    assert [m["content"] for m in conversation["messages"]] == ["Good morning from the one prep."]
    assert len(llm.chat_bodies()) == 1, "the second process never called the model: it found the day claimed"


def test_a_plan_fires_at_its_local_time_on_its_days_and_knows_a_missed_day() -> None:
    tokyo = ZoneInfo("Asia/Tokyo")
    plan = Plan(1, tokyo, time(7, 30), ("mon", "fri"))
    saturday_noon = datetime(2026, 12, 5, 12, 0, tzinfo=tokyo)
    fires = plan.trigger().get_next_fire_time(None, saturday_noon)
    assert fires == datetime(2026, 12, 7, 7, 30, tzinfo=tokyo)  # Monday, 07:30 in Tokyo (Sunday 22:30 UTC)
    assert plan.missed(saturday_noon) is None  # not one of its days
    friday = datetime(2026, 12, 4, 7, 29, tzinfo=tokyo)
    assert plan.missed(friday) is None and plan.missed(friday + timedelta(minutes=1)) == friday.date()
    assert plan.missed(datetime(2026, 12, 3, 23, 0, tzinfo=UTC)) == friday.date()  # already Friday 08:00 in Tokyo
