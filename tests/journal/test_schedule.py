"""The prep's schedule, a job: each user's plan from their settings, read at every run (a change
takes effect at the next minute), a day prepared once, and once across several processes.
The job's clock is given (``now``, a fixed morning) wherever the hour matters."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import select, update
from support.fake_llm import FakeLLM, Reply
from support.pace import scaled

from fable_core.config import Settings
from fable_core.daily.journal.schedule import EVERY, Plan, prepare_due, read_plans
from fable_core.db.models import JournalDay, Message, User
from fable_core.errors import InvalidInput
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.jobs import JOBS, run_job

CHILD = Path(__file__).with_name("prep_child.py")
NOW = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)  # a Tuesday: 18:00 in Tokyo, 05:00 in New York


async def set_journal(fable: Fable, caller: Caller, **prefs: object) -> None:
    await fable.call("set_setting", {"key": "journal", "value": prefs}, caller)


async def states(fable: Fable) -> dict[int, str]:
    async with fable.db.reading() as session:
        return dict((await session.execute(select(JournalDay.user_id, JournalDay.prep_state))).all())


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


async def test_a_run_prepares_each_due_day_once_and_not_a_later_or_unscheduled_one(
        fable: Fable, alice: Caller, bob: Caller) -> None:
    await set_journal(fable, alice, prep_time="08:59")  # in UTC: passed at NOW, a minute ago
    await set_journal(fable, bob, prep_time="18:01", timezone="Asia/Tokyo")  # a minute to come at NOW
    assert await prepare_due(fable, NOW) == 1
    assert await states(fable) == {alice.user_id: "done"}
    assert await prepare_due(fable, NOW + timedelta(seconds=EVERY)) == 1  # bob's minute has come
    assert await states(fable) == {alice.user_id: "done", bob.user_id: "done"}
    assert await prepare_due(fable, NOW + timedelta(hours=2)) == 0  # a later run prepares nothing twice
    async with fable.db.reading() as session:
        assert await session.scalar(select(Message.id).where(Message.role == "assistant").offset(2)) is None


async def test_a_day_prepared_by_hand_is_not_prepared_again_by_the_job(fable: Fable, alice: Caller) -> None:
    await set_journal(fable, alice, prep_time="12:00")
    day = await fable.call("prepare_journal", {"day": NOW.date().isoformat()}, alice)
    assert await prepare_due(fable, NOW + timedelta(hours=4)) == 0
    again = await fable.call("open_journal", {"day": NOW.date().isoformat()}, alice)
    assert again["opener"] == day["opener"]


async def test_a_changed_setting_takes_effect_at_the_next_run_and_no_days_means_never(
        fable: Fable, ai_fable: Fable, alice: Caller, bob: Caller) -> None:
    await set_journal(fable, alice, prep_time="23:59", timezone="Asia/Tokyo")
    await ai_fable.call("set_setting", {"key": "timezone", "value": "America/New_York"}, bob)  # another runtime
    assert await prepare_due(fable, NOW) == 0  # alice: late tonight in Tokyo; bob: 06:00 in New York, not yet
    await set_journal(fable, alice, days=[])
    await ai_fable.call("set_setting", {"key": "timezone", "value": "Europe/Paris"}, bob)  # 10:00 there
    assert await prepare_due(fable, NOW) == 1
    assert await states(fable) == {bob.user_id: "done"}
    await set_journal(fable, alice, prep_time="07:45", days=["tue"])  # moved earlier, still Tokyo
    assert await prepare_due(fable, NOW + timedelta(seconds=EVERY)) == 1
    assert await states(fable) == {alice.user_id: "done", bob.user_id: "done"}


async def test_the_job_runs_every_minute_and_prepares_what_is_due_now(fable: Fable, alice: Caller) -> None:
    assert (JOBS["prepare_due_journals"].every, JOBS["prepare_due_journals"].cron) == (EVERY, None)
    await set_journal(fable, alice, prep_time="00:00")  # passed today in UTC, whatever the hour
    before = datetime.now(UTC).date()
    assert await run_job(fable, "prepare_due_journals")
    async with fable.db.reading() as session:
        day, state = (await session.execute(select(JournalDay.day, JournalDay.prep_state))).one()
    assert state == "done" and day in (before, datetime.now(UTC).date())  # one side of midnight


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
           "FABLE_SECRET_KEY": "x" * 32, "FABLE_JOB_EVERY": "prepare_due_journals=1"}  # not a minute's wait
    today = datetime.now(UTC).date().isoformat()
    children = [await asyncio.create_subprocess_exec(sys.executable, str(CHILD), str(alice.user_id), today, env=env,
                                                     stdout=asyncio.subprocess.PIPE) for _ in range(2)]
    outputs = await asyncio.wait_for(asyncio.gather(*(c.communicate() for c in children)), scaled(90))
    assert [c.returncode for c in children] == [0, 0]
    assert [json.loads(out.decode().strip().splitlines()[-1]) for out, _ in outputs] == [{"state": "done"}] * 2
    day = await fable.call("open_journal", {}, alice)
    conversation = await fable.call("get_conversation", {"conversation_id": day["conversation_id"]}, alice)
    assert [m["content"] for m in conversation["messages"]] == ["Good morning from the one prep."]
    assert len(llm.chat_bodies()) == 1, "the second process never called the model: it found the job or the day claimed"


def test_a_plan_is_due_after_its_local_time_on_its_days() -> None:
    tokyo = ZoneInfo("Asia/Tokyo")
    plan = Plan(1, tokyo, time(7, 30), ("mon", "fri"))
    assert plan.due(datetime(2026, 12, 5, 12, 0, tzinfo=tokyo)) is None  # a Saturday: not one of its days
    friday = datetime(2026, 12, 4, 7, 29, tzinfo=tokyo)
    assert plan.due(friday) is None and plan.due(friday + timedelta(minutes=1)) == friday.date()
    assert plan.due(datetime(2026, 12, 3, 23, 0, tzinfo=UTC)) == friday.date()  # already Friday 08:00 in Tokyo
    assert plan.due(datetime(2026, 12, 7, 7, 30, tzinfo=tokyo)) == date(2026, 12, 7)  # Monday
