"""The journal's days: one conversation per user and day (a date in the user's zone), made the
first time the day is opened, and the tools that open a day and list a range of days.

A journal day is an assistant conversation (``conversation_type`` ``journal``, its date in
``day_date``) marked by its ``journal_days`` row, so talking in it is the assistant's chat
(send_message, follow_answer, stop_answer): the same generation, streams and resume. The row is
unique per user and day; making it takes a transaction-scoped advisory lock on the pair, so two
callers opening the same new day at once (two tabs, a prep in another process) make one.
"""

from __future__ import annotations

import zlib
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated
from zoneinfo import ZoneInfo

from pydantic import BaseModel, Field
from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.daily.journal.sections import PrepDay
from fable_core.db.models import Conversation, JournalDay, Message
from fable_core.errors import InvalidInput
from fable_core.people.preferences.journal import JOURNAL, JournalPrefs
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import owned_by
from fable_core.tools.caller import Caller
from fable_core.tools.clock import TIMEZONE
from fable_core.tools.preferences import read_settings
from fable_core.tools.results import absent_when_none

__all__ = ["MAX_RANGE", "Day", "DayView", "JournalDays", "check_day", "day_title", "day_view", "journal_clock",
           "open_day", "prep_day", "today_of"]

MAX_RANGE = 92  # days a listing spans at most: a quarter
_LOCK_CLASS = 0x4A524E4C  # "JRNL"
Day = Annotated[date | None, Field(description="Default: today.")]


class DayView(BaseModel):
    """A journal day: its conversation (read it with get_conversation) and its morning note."""

    day: date
    conversation_id: int
    prep: str = Field(description="none, preparing, done, skipped or failed.")
    opener: str | None = absent_when_none("The morning note, first message of the day.")
    error: str | None = absent_when_none("Why the morning note could not be written (prep failed).")


class JournalDays(BaseModel):
    items: list[DayView]


async def journal_clock(session: AsyncSession, caller: Caller) -> tuple[JournalPrefs, ZoneInfo]:
    """The caller's journal settings and the zone their days are in (the journal's own
    ``timezone``, else their ``timezone`` setting, else UTC)."""
    prefs, zone = await read_settings(session, caller, JOURNAL, TIMEZONE)
    return prefs, ZoneInfo(prefs.timezone or zone)


def prep_day(user_id: int, day: date, zone: ZoneInfo, prefs: JournalPrefs) -> PrepDay:
    """``day`` in ``zone`` as the sections see it, with its bounds in UTC."""
    start = datetime.combine(day, time(0), zone).astimezone(UTC)
    end = datetime.combine(day + timedelta(days=1), time(0), zone).astimezone(UTC)
    return PrepDay(user_id=user_id, day=day, zone=zone, start=start, end=end, prefs=prefs)


def day_title(day: date) -> str:
    return f"Journal {day:%A} {day.day} {day:%B %Y}"


def _lock_key(user_id: int, day: date) -> int:
    return zlib.crc32(f"{user_id}:{day.isoformat()}".encode()) - 2**31


async def open_day(session: AsyncSession, caller: Caller, day: date) -> JournalDay:
    """The caller's journal row for ``day``, made (with its conversation) when there is none."""
    found = await _find(session, caller, day)
    if found is not None:
        return found
    await session.execute(select(func.pg_advisory_xact_lock(_LOCK_CLASS, _lock_key(caller.user_id, day))))
    found = await _find(session, caller, day)  # made by whoever held the lock before us
    if found is not None:
        return found
    conversation_id = (await session.execute(insert(Conversation).values(
        user_id=caller.user_id, conversation_type="journal", day_date=day, title=day_title(day),
        rag_project_id=-1).returning(Conversation.id))).scalar_one()
    return (await session.execute(insert(JournalDay).values(
        user_id=caller.user_id, day=day, conversation_id=conversation_id).returning(JournalDay))).scalar_one()


async def _find(session: AsyncSession, caller: Caller, day: date) -> JournalDay | None:
    return (await session.execute(select(JournalDay).where(
        owned_by(JournalDay, caller), JournalDay.day == day).execution_options(populate_existing=True))
    ).scalar_one_or_none()


async def day_view(session: AsyncSession, row: JournalDay) -> DayView:
    opener = None
    if row.opener_message_id is not None:
        opener = await session.scalar(select(Message.content).where(Message.id == row.opener_message_id))
    return DayView(day=row.day, conversation_id=row.conversation_id, prep=row.prep_state, opener=opener,
                   error=row.error if row.prep_state == "failed" else None)


async def today_of(session: AsyncSession, caller: Caller) -> tuple[date, ZoneInfo]:
    _, zone = await journal_clock(session, caller)
    return datetime.now(UTC).astimezone(zone).date(), zone


def check_day(day: date, today: date, zone: ZoneInfo, field: str = "day") -> None:
    """InvalidInput for a day after today: a journal is written on or after its day."""
    if day > today:
        raise InvalidInput(f"{field} {day.isoformat()} is after today ({today.isoformat()} in {zone.key})",
                           field=field)


# --- tools ------------------------------------------------------------------------------------


@tool(group="journal", title="Open a journal day", scope="write", idempotent=True, route=Route("POST", "/journal/days"))
async def open_journal(ctx: Context, day: Day = None) -> DayView:
    """Your journal conversation for a day, made if new; write in it with send_message."""
    today, zone = await today_of(ctx.session, ctx.caller)
    check_day(day or today, today, zone)
    return await day_view(ctx.session, await open_day(ctx.session, ctx.caller, day or today))


@tool(group="journal", title="List journal days", scope="read", route=Route("GET", "/journal/days"))
async def list_journal_days(ctx: Context, start: date | None = None, end: date | None = None) -> JournalDays:
    """Your journal days from start to end (default: the 30 days to today), newest first; at most 92 days."""
    today, _ = await today_of(ctx.session, ctx.caller)
    end = end or (today if start is None else min(start + timedelta(days=MAX_RANGE - 1), today))
    start = start or end - timedelta(days=29)
    if end < start:
        raise InvalidInput(f"end {end.isoformat()} is before start {start.isoformat()}", field="end")
    if (end - start).days >= MAX_RANGE:
        raise InvalidInput(f"a listing spans at most {MAX_RANGE} days; {start} to {end} is {(end - start).days + 1}",
                           field="end")
    rows = (await ctx.session.execute(select(JournalDay).where(owned_by(JournalDay, ctx.caller),
                                                               JournalDay.day.between(start, end))
                                      .order_by(JournalDay.day.desc()))).scalars()
    return JournalDays(items=[DayView(day=r.day, conversation_id=r.conversation_id, prep=r.prep_state,
                                      error=r.error if r.prep_state == "failed" else None) for r in rows])
