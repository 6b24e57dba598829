"""The morning prep's job retries: a claim whose holder died is taken over once its lease is
over (never before), a failing day is tried again after its backoff, and a day that keeps
failing stays ``failed``, saying why. The job's clock is given (``now``): a fixed morning, so
that nothing here depends on the hour the suite runs at."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select, update
from support.fake_llm import FakeLLM, Reply
from support.pace import scaled

from fable_core.daily.journal.days import open_day
from fable_core.daily.journal.prep import BACKOFF, DIED, LEASE, MAX_ATTEMPTS
from fable_core.daily.journal.schedule import prepare_due
from fable_core.db.models import JournalDay, Message
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

NOW = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)  # a Tuesday morning, 09:00 in UTC: alice's prep (06:00) is due
DAY = NOW.date()


async def killed_claim(fable: Fable, caller: Caller, *, attempts: int = 1) -> None:
    """What a prep killed mid-way (kill -9) leaves: the day ``preparing``, claimed a little
    before NOW with the lease it took then, never renewed again."""
    claimed = NOW - timedelta(seconds=10)
    async with fable.db.transaction() as session:
        row = await open_day(session, caller, DAY)
        await session.execute(update(JournalDay).where(JournalDay.id == row.id).values(
            prep_state="preparing", claimed_at=claimed, lease_until=claimed + LEASE, attempts=attempts))


async def the_day(fable: Fable) -> JournalDay:
    async with fable.db.reading() as session:
        return (await session.execute(select(JournalDay).where(JournalDay.day == DAY))).scalar_one()


async def openers(fable: Fable) -> int:
    async with fable.db.reading() as session:
        return await session.scalar(select(func.count()).select_from(Message).where(Message.role == "assistant"))


async def test_a_day_claimed_by_a_killed_prep_is_prepared_once_its_lease_is_over_and_not_before(
        fable: Fable, alice: Caller) -> None:
    await killed_claim(fable, alice)
    lapses = NOW - timedelta(seconds=10) + LEASE
    assert await prepare_due(fable, lapses - timedelta(seconds=1)) == 0  # the claim may still be alive
    row = await the_day(fable)
    assert (row.prep_state, row.attempts, await openers(fable)) == ("preparing", 1, 0)
    assert await prepare_due(fable, lapses) == 1
    row = await the_day(fable)
    assert (row.prep_state, row.attempts, row.error, await openers(fable)) == ("done", 2, None, 1)
    assert await prepare_due(fable, lapses + timedelta(hours=1)) == 0  # done: never twice a day
    assert await openers(fable) == 1


async def test_a_prep_that_keeps_failing_is_retried_after_its_backoffs_then_stays_failed_saying_why(
        settled: Fable, llm: FakeLLM, alice: Caller) -> None:
    await settled.call("create_note", {"title": "Water the plants", "status": "todo", "due_date": DAY.isoformat()},
                       alice)
    # a model answer the database refuses to store (PostgreSQL text holds no NUL): the prep fails
    # after its claim, at every attempt
    llm.plain_replies.extend(Reply("Good\x00morning.") for _ in range(MAX_ATTEMPTS + 1))
    at = NOW
    for attempt in range(1, MAX_ATTEMPTS):
        assert await prepare_due(settled, at) == 0
        row = await the_day(settled)
        assert (row.prep_state, row.attempts, row.retry_at) == ("failed", attempt, at + BACKOFF[attempt - 1])
        assert row.error and "gave up" not in row.error
        assert await prepare_due(settled, row.retry_at - timedelta(seconds=1)) == 0  # not before its backoff
        assert (await the_day(settled)).attempts == attempt
        at = row.retry_at
    assert await prepare_due(settled, at) == 0
    row = await the_day(settled)
    assert (row.prep_state, row.attempts, row.retry_at) == ("failed", MAX_ATTEMPTS, None)
    assert row.error.startswith(f"gave up after {MAX_ATTEMPTS} attempts; the last: ")
    assert await prepare_due(settled, at + timedelta(hours=2)) == 0  # not retried forever
    assert len(llm.chat_bodies()) == MAX_ATTEMPTS
    shown = await settled.call("open_journal", {"day": DAY.isoformat()}, alice)  # where the day's state shows
    assert (shown["prep"], shown["error"]) == ("failed", row.error)
    listed = await settled.call("list_journal_days", {"start": DAY.isoformat(), "end": DAY.isoformat()}, alice)
    assert listed["items"][0]["error"] == row.error


async def test_a_day_whose_last_attempt_was_killed_too_stays_failed_saying_its_prep_died(
        fable: Fable, alice: Caller) -> None:
    await killed_claim(fable, alice, attempts=MAX_ATTEMPTS)
    assert await prepare_due(fable, NOW + LEASE) == 0
    row = await the_day(fable)
    assert (row.prep_state, row.attempts, row.error) == (
        "failed", MAX_ATTEMPTS, f"gave up after {MAX_ATTEMPTS} attempts; the last: {DIED}")
    assert await prepare_due(fable, NOW + timedelta(hours=3)) == 0
    assert await openers(fable) == 0
    day = await fable.call("prepare_journal", {"day": DAY.isoformat()}, alice)  # by hand, it still can
    assert day["prep"] == "done" and "error" not in day


async def test_a_prep_taken_over_after_its_lease_stores_nothing_of_its_own(
        settled: Fable, llm: FakeLLM, alice: Caller) -> None:
    """A holder cut off past its lease (here: a model call slower than the lease) comes back to
    find its day taken over: only the new holder's opener is stored."""
    await settled.call("create_note", {"title": "Water the plants", "status": "todo", "due_date": DAY.isoformat()},
                       alice)
    held = threading.Event()
    llm.plain_replies.extend([Reply("From the holder presumed dead.", hold=held), Reply("From the new holder.")])
    first = asyncio.create_task(prepare_due(settled, NOW))
    await until(lambda: len(llm.chat_bodies()) == 1)
    second = asyncio.create_task(prepare_due(settled, NOW + LEASE))
    await until(lambda: _attempts(settled, 2))
    held.set()
    assert sorted(await asyncio.gather(first, second)) == [0, 1]
    row = await the_day(settled)
    assert (row.prep_state, row.attempts) == ("done", 2)
    async with settled.db.reading() as session:
        assert list((await session.execute(select(Message.content).where(Message.role == "assistant"))).scalars()) \
            == ["From the new holder."]


async def _attempts(fable: Fable, n: int) -> bool:
    async with fable.db.reading() as session:
        return await session.scalar(select(JournalDay.attempts).where(JournalDay.day == DAY)) == n


async def until(check, seconds: float = 10.0) -> None:
    for _ in range(int(scaled(seconds) / 0.02)):
        result = check()
        if (await result) if asyncio.iscoroutine(result) else result:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("never held")
