"""Events created, changed and deleted for a caller, inside the caller's open session: the one
place the calendar's rules live. The tools (:mod:`.events`) parse what people and agents write
and call these; CalDAV sync calls them with values it read from a server.

    event = await create_event(session, caller, EventFields(title="Standup", start=nine,
                                                            rrule="FREQ=WEEKLY;BYDAY=MO"))
    await update_event(session, caller, event.id, EventFields(title="Retro"), occurrence=monday)
    await delete_event(session, caller, event.id, occurrence=next_monday)  # an exception
    await delete_event(session, caller, event.id)  # the series, its overrides, and a tombstone

Times are aware datetimes (a naive one is in the event's zone: ``timezone``, else the owner's
``timezone`` setting) or dates (all-day, end exclusive). An event is its owner's alone: any
other id is NotFound. Bad input raises InvalidInput naming the value, before anything is
written. Changing a series' start, zone, all-day or rule drops its exceptions and changed
occurrences (they were keyed by the old starts), as calendar apps do.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from types import SimpleNamespace
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.daily.calendar.occurrences import duration, first_key, occurs, series_zone
from fable_core.daily.calendar.recurrence import check_rule, last_start
from fable_core.daily.calendar.times import EARLIEST_OFFSET, LATEST_OFFSET, When, as_key, check_year, zone_named
from fable_core.db.models import CalendarEvent, EventTombstone, Note, Project
from fable_core.errors import Conflict, InvalidInput, NotFound
from fable_core.tools.access import get_visible, owned_by
from fable_core.tools.caller import Caller
from fable_core.tools.clock import user_timezone

__all__ = ["CLEARABLE", "EventFields", "create_event", "delete_event", "get_event", "override_of",
           "update_event"]

MAX_TITLE, MAX_DESCRIPTION, MAX_LOCATION = 300, 20_000, 500
CLEARABLE = frozenset({"color", "rrule", "note_id", "project_id", "exdates"})
_COLOR = re.compile(r"^#[0-9a-f]{6}$")
_TIMING = ("start_at", "end_at", "start_date", "end_date", "timezone", "all_day", "rrule")


@dataclass(frozen=True, slots=True)
class EventFields:
    """What an event is made of; None is "not given" (a change leaves it as it was). ``clear``
    names fields to empty (:data:`CLEARABLE`). ``all_day`` None: as the event is, or, for a new
    one, whether ``start`` is a date."""

    title: str | None = None
    start: When | None = None
    end: When | None = None
    all_day: bool | None = None
    timezone: str | None = None
    description: str | None = None
    location: str | None = None
    color: str | None = None
    rrule: str | None = None
    exdates: Sequence[When] | None = None
    note_id: int | None = None
    project_id: int | None = None
    clear: frozenset[str] = field(default_factory=frozenset)


async def get_event(session: AsyncSession, caller: Caller, event_id: int, *, for_update: bool = False) -> CalendarEvent:
    """The caller's event ``event_id`` (a series or a single event); NotFound otherwise."""
    stmt = select(CalendarEvent).where(CalendarEvent.id == event_id, owned_by(CalendarEvent, caller),
                                       CalendarEvent.series_id.is_(None))
    row = await session.scalar(stmt.with_for_update() if for_update else stmt)
    if row is None:
        raise NotFound(f"event {event_id} not found", event_id=event_id)
    return row


async def create_event(session: AsyncSession, caller: Caller, fields: EventFields, *,
                       uid: str | None = None) -> CalendarEvent:
    """A new event of the caller's; ``uid`` (iCalendar's, from a server) or a new one. Conflict
    when the caller already has an event with that uid."""
    if fields.title is None or fields.start is None:
        raise InvalidInput("an event needs a title and a start", field="title" if fields.title is None else "start")
    if uid is not None and await session.scalar(select(CalendarEvent.id).where(
            owned_by(CalendarEvent, caller), CalendarEvent.uid == uid, CalendarEvent.series_id.is_(None))):
        raise Conflict(f"you already have an event with uid {uid[:255]!r}", uid=uid[:255])
    row = CalendarEvent(user_id=caller.user_id, uid=uid or f"{uuid.uuid4()}@fable", exdates=[])
    await _apply(session, caller, row, fields, await user_timezone(session, caller), new=True)
    session.add(row)
    await session.flush()
    return row


async def update_event(session: AsyncSession, caller: Caller, event_id: int, fields: EventFields, *,
                       occurrence: When | None = None) -> CalendarEvent:
    """Change the event ``event_id`` (a whole series), or with ``occurrence`` (its original
    start) that one occurrence of a series alone: the override row that now stands for it."""
    series = await get_event(session, caller, event_id, for_update=True)
    user_zone = await user_timezone(session, caller)
    if occurrence is None:
        await _apply(session, caller, series, fields, user_zone, new=False)
        await session.flush()
        return series
    if fields.all_day is not None and fields.all_day == series.all_day:
        fields = replace(fields, all_day=None)  # as the series is: no change (a form sends it with new times)
    if fields.rrule is not None and fields.rrule == series.rrule:
        fields = replace(fields, rrule=None)
    for name in ("rrule", "exdates", "all_day"):
        if getattr(fields, name) is not None or name in fields.clear:
            raise InvalidInput(f"{name} belongs to the whole series: change event {event_id} without occurrence",
                               field=name)
    key = occurrence_key(series, occurrence, user_zone)
    row = await override_of(session, series, key)
    fresh = row is None
    row = _copy_at(series, key) if row is None else row
    await _apply(session, caller, row, fields, user_zone, new=False)
    if fresh:
        session.add(row)
    await session.flush()
    return row


async def delete_event(session: AsyncSession, caller: Caller, event_id: int, *,
                       occurrence: When | None = None) -> None:
    """Delete the event ``event_id`` with its changed occurrences (leaving a tombstone when CalDAV
    sync stored it on a server), or with ``occurrence`` only that occurrence of a series (an
    exception: EXDATE)."""
    series = await get_event(session, caller, event_id, for_update=True)
    if occurrence is None:
        if series.caldav_href is not None:
            session.add(EventTombstone(owner_id=series.user_id, uid=series.uid, caldav_href=series.caldav_href,
                                       etag=series.caldav_etag))
        await session.delete(series)
        await session.flush()
        return
    key = occurrence_key(series, occurrence, await user_timezone(session, caller))
    await session.execute(delete(CalendarEvent).where(CalendarEvent.series_id == series.id,
                                                      CalendarEvent.recurrence_id == key))
    series.exdates = sorted({*series.exdates, key})
    await session.flush()


async def override_of(session: AsyncSession, series: CalendarEvent, key: datetime) -> CalendarEvent | None:
    """The row that changed the occurrence ``key`` of ``series``, if any."""
    return await session.scalar(select(CalendarEvent).where(
        CalendarEvent.series_id == series.id, CalendarEvent.recurrence_id == key))


def occurrence_key(series: CalendarEvent, occurrence: When, user_zone: str) -> datetime:
    """The key of an occurrence of ``series`` named by its original start; InvalidInput when it
    is the wrong kind of value, NotFound when the series has no such occurrence."""
    shown = occurrence.isoformat()
    if series.rrule is None:
        raise InvalidInput(f"event {series.id} does not recur: leave occurrence out", field="occurrence",
                           value=shown)
    if series.all_day and isinstance(occurrence, datetime):
        raise InvalidInput(f"occurrence {shown!r} has a time, but event {series.id} is all-day: give its date",
                           field="occurrence", value=shown)
    if not series.all_day and not isinstance(occurrence, datetime):
        raise InvalidInput(f"occurrence {shown!r} is a date, but event {series.id} is timed: give its start "
                           "('occurrence' of list_events)", field="occurrence", value=shown)
    if isinstance(occurrence, datetime) and occurrence.tzinfo is None:
        occurrence = occurrence.replace(tzinfo=ZoneInfo(user_zone))
    key = as_key(occurrence, series_zone(series))
    if not occurs(series, key):
        raise NotFound(f"event {series.id} has no occurrence starting {shown!r}", event_id=series.id,
                       occurrence=shown)
    return key


def _copy_at(series: CalendarEvent, key: datetime) -> CalendarEvent:
    """A new override of ``series`` for its occurrence ``key``, as the occurrence is."""
    row = CalendarEvent(user_id=series.user_id, uid=series.uid, series_id=series.id, recurrence_id=key,
                        title=series.title, description=series.description, location=series.location,
                        color=series.color, all_day=series.all_day, timezone=series.timezone,
                        note_id=series.note_id, project_id=series.project_id, exdates=[])
    if series.all_day:
        row.start_date = key.date()
        row.end_date = key.date() + duration(series)
    else:
        row.start_at = key.replace(tzinfo=ZoneInfo(series.timezone or "UTC")).astimezone(UTC)
        row.end_at = row.start_at + duration(series)
    return row


# --- applying fields --------------------------------------------------------------------------


async def _apply(session: AsyncSession, caller: Caller, row: CalendarEvent, f: EventFields, user_zone: str, *,
                 new: bool) -> None:
    """Check every field given, then set them on ``row``: nothing is set when one is wrong."""
    unknown = f.clear - CLEARABLE
    if unknown:
        raise InvalidInput(f"cannot clear {sorted(unknown)}: clear one of {sorted(CLEARABLE)}", field="clear")
    texts = _texts(f)
    timing: dict[str, Any] = _times(row, f, user_zone, new=new)
    timing["rrule"] = None if "rrule" in f.clear else (_rule(f.rrule) if f.rrule is not None else row.rrule)
    planned = SimpleNamespace(**timing)
    last = _last(planned)
    exdates = None if f.exdates is None else sorted({_exdate(planned, value) for value in f.exdates})
    await _check_links(session, caller, f)
    retimed = not new and any(getattr(row, name) != timing[name] for name in _TIMING if not name.startswith("end"))
    for name, value in {**timing, **texts}.items():
        setattr(row, name, value)
    for name in ("color", "note_id", "project_id"):
        if name in f.clear:
            setattr(row, name, None)
    for name in ("note_id", "project_id"):
        if getattr(f, name) is not None:
            setattr(row, name, getattr(f, name))
    if retimed and row.series_id is None and row.exdates:
        row.exdates = []
    if retimed and row.series_id is None:  # its overrides were named by the old starts
        await session.execute(delete(CalendarEvent).where(CalendarEvent.series_id == row.id))
    if exdates is not None or "exdates" in f.clear:
        row.exdates = exdates or []
    _set_span(row, last)


def _texts(f: EventFields) -> dict[str, str | None]:
    texts: dict[str, str | None] = {}
    if f.title is not None:
        title = f.title.strip()
        if not 1 <= len(title) <= MAX_TITLE:
            raise InvalidInput(f"title must be 1 to {MAX_TITLE} characters, not {len(title)}", field="title")
        texts["title"] = title
    for name, limit in (("description", MAX_DESCRIPTION), ("location", MAX_LOCATION)):
        value = getattr(f, name)
        if value is not None:
            if len(value) > limit:
                raise InvalidInput(f"{name} must be at most {limit} characters, not {len(value)}", field=name)
            texts[name] = value.strip() if name == "location" else value
    if f.color is not None:
        color = f.color.strip().lower()
        if not _COLOR.match(color):
            raise InvalidInput(f"color {f.color[:40]!r} is not a colour: give #rrggbb, e.g. '#3366cc'",
                               field="color", value=f.color[:40])
        texts["color"] = color
    return texts


def _rule(text: str) -> str:
    try:
        return check_rule(text)
    except ValueError as e:
        raise InvalidInput(str(e), field="rrule", value=text[:200]) from None


def _times(row: CalendarEvent, f: EventFields, user_zone: str, *, new: bool) -> dict[str, Any]:
    """The start, end, zone and all-day of ``row`` with ``f`` applied, checked together."""
    all_day = f.all_day if f.all_day is not None else (
        (not isinstance(f.start, datetime)) if new else row.all_day)
    if not new and all_day != row.all_day and f.start is None:
        raise InvalidInput("changing all_day needs a start: a date for an all-day event, a date-time otherwise",
                           field="start")
    if row.series_id is not None and all_day != row.all_day:
        raise InvalidInput("an occurrence is all-day or timed as its series is", field="all_day")
    if all_day:
        if f.timezone is not None:
            zone_named(f.timezone)  # a bad zone is refused even here
        return _dates(row, f, keep=not new and row.all_day)
    zone_name = f.timezone or (row.timezone if not new and row.timezone else user_zone)
    zone = zone_named(zone_name)
    old = None if new or row.all_day or row.start_at is None or row.end_at is None else (row.start_at, row.end_at)
    start = _instant(f.start, "start", zone) if f.start is not None else (old[0] if old else None)
    if start is None:
        raise InvalidInput("a timed event needs a start date-time", field="start")
    if f.end is not None:
        end = _instant(f.end, "end", zone)
    elif old is not None:
        end = start + (old[1] - old[0])
    else:
        end = start + timedelta(hours=1)
    if end < start:
        raise InvalidInput(f"end {_shown(f.end, end)!r} is before start {_shown(f.start, start)!r}", field="end",
                           start=start.isoformat(), end=end.isoformat())
    return {"all_day": False, "timezone": zone_name, "start_at": start.astimezone(UTC),
            "end_at": end.astimezone(UTC), "start_date": None, "end_date": None}


def _dates(row: CalendarEvent, f: EventFields, *, keep: bool) -> dict[str, Any]:
    """An all-day event's dates; ``keep``: the row's own are the ones to change."""
    old = (row.start_date, row.end_date) if keep else None
    start = _day(f.start, "start") if f.start is not None else (old[0] if old else None)
    if start is None:
        raise InvalidInput("an all-day event needs a start date", field="start")
    if f.end is not None:
        end = _day(f.end, "end")
    elif old is not None and old[0] is not None and old[1] is not None:
        end = start + (old[1] - old[0])
    else:
        end = start + timedelta(days=1)
    if end <= start:
        raise InvalidInput(f"end {end.isoformat()!r} must be after start {start.isoformat()!r} (an all-day end is "
                           f"exclusive: a one-day event on {start.isoformat()} ends on "
                           f"{(start + timedelta(days=1)).isoformat()})",
                           field="end", start=start.isoformat(), end=end.isoformat())
    return {"all_day": True, "timezone": None, "start_date": start, "end_date": end, "start_at": None, "end_at": None}


def _instant(value: When, name: str, zone: ZoneInfo) -> datetime:
    if not isinstance(value, datetime):
        raise InvalidInput(f"{name} {value.isoformat()!r} is a date, but the event is timed: give a time "
                           f"('{value.isoformat()}T09:00') or make it all-day", field=name, value=value.isoformat())
    check_year(value, name)
    return value if value.tzinfo is not None else value.replace(tzinfo=zone)


def _day(value: When, name: str) -> date:
    if isinstance(value, datetime):
        raise InvalidInput(f"{name} {value.isoformat()!r} has a time, but the event is all-day: give a date "
                           f"({value.date().isoformat()!r})", field=name, value=value.isoformat())
    check_year(value, name)
    return value


def _shown(given: When | None, value: datetime) -> str:
    return given.isoformat() if given is not None else value.isoformat()


def _last(row: Any) -> datetime | None:
    """The series' last start (None: endless, or a single event); InvalidInput when its rule
    yields nothing from its start."""
    if row.rrule is None:
        return None
    try:
        return last_start(row.rrule, first_key(row), series_zone(row))
    except ValueError as e:
        raise InvalidInput(str(e), field="rrule", value=row.rrule) from None


def _exdate(row: Any, value: When) -> datetime:
    if row.rrule is None:
        raise InvalidInput("exdates need a recurring event (an rrule)", field="exdates")
    if row.all_day != (not isinstance(value, datetime)):
        kind = "dates" if row.all_day else "date-times"
        raise InvalidInput(f"exdate {value.isoformat()!r}: the exdates of this event are {kind}", field="exdates",
                           value=value.isoformat())
    if isinstance(value, datetime) and value.tzinfo is None:
        value = value.replace(tzinfo=series_zone(row))
    return as_key(value, series_zone(row))


async def _check_links(session: AsyncSession, caller: Caller, f: EventFields) -> None:
    """NotFound, as for a missing id, unless the caller may read the note and project linked."""
    if f.note_id is not None:
        await get_visible(session, Note, f.note_id, caller)
    if f.project_id is not None:
        await get_visible(session, Project, f.project_id, caller)


def _set_span(row: CalendarEvent, last: datetime | None) -> None:
    """The UTC bounds of everything the row covers (:attr:`CalendarEvent.span_start`)."""
    endless = row.rrule is not None and last is None
    if row.all_day:
        assert row.start_date is not None and row.end_date is not None
        row.span_start = datetime.combine(row.start_date, time(), UTC) - EARLIEST_OFFSET
        last_day = last.date() if last is not None else row.start_date
        row.span_end = None if endless else (
            datetime.combine(last_day + (row.end_date - row.start_date), time(), UTC) + LATEST_OFFSET)
        return
    assert row.start_at is not None and row.end_at is not None and row.timezone is not None
    row.span_start = row.start_at
    if endless:
        row.span_end = None
    elif last is not None:
        row.span_end = last.replace(tzinfo=ZoneInfo(row.timezone)).astimezone(UTC) + (row.end_at - row.start_at)
    else:
        row.span_end = row.end_at
