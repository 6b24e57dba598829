"""The calendar as tools: create, change, delete and read events, and list what falls in a range.

Times are ISO 8601: with an offset, or without one meaning the caller's ``timezone`` setting
(or the ``timezone`` argument, the zone a timed event is made in and recurs in); a date alone is
an all-day event (end exclusive). Results show times in the caller's zone. The rules (what is
valid, what a change to a series does) live in :mod:`.service`.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo

from pydantic import Field, StringConstraints
from sqlalchemy import select

from fable_core.daily.calendar import (
    prep,  # noqa: F401 - registers the morning note's section with the tools
    service,
)
from fable_core.daily.calendar.occurrences import NO_KEY, Occurrence, occurrences_between, rows_between, series_zone
from fable_core.daily.calendar.service import EventFields
from fable_core.daily.calendar.times import When, format_when, from_key, parse_when, zone_named
from fable_core.daily.calendar.views import EventDeleted, EventItem, EventPage, EventView
from fable_core.db.models import CalendarEvent
from fable_core.errors import InvalidInput
from fable_core.knowledge.types import NoteId, Title
from fable_core.tools import Context, Route, tool
from fable_core.tools.paging import Cursor, decode_cursor, encode_cursor
from fable_core.tools.results import RowId

__all__ = ["MAX_RANGE_DAYS"]

MAX_RANGE_DAYS = 366
EventId = Annotated[int, Field(ge=1, le=2**31 - 1)]
# strings whose length the service judges, naming the value: their schema stays short
WhenText = str
Zone = str
Rule = str
Color = str
Location = str
Description = Annotated[str, StringConstraints(max_length=service.MAX_DESCRIPTION)]
PageSize = Annotated[int, Field(ge=1, le=500)]
Clearable = Literal["color", "rrule", "note_id", "project_id"]


@tool(group="calendar", title="Create an event", scope="write", route=Route("POST", "/events", status=201))
async def create_event(
    ctx: Context, title: Title, start: WhenText, end: WhenText | None = None, all_day: bool | None = None,
    timezone: Zone | None = None, rrule: Rule | None = None, location: Location = "", description: Description = "",
    color: Color | None = None, note_id: NoteId | None = None, project_id: RowId | None = None,
) -> EventView:
    """Add an event to your calendar.

    Args:
        start: ISO 8601, no offset: your timezone. A date: all-day.
        end: Default start+1h; all-day: exclusive date.
        timezone: IANA; default yours.
        rrule: RRULE, e.g. FREQ=WEEKLY;BYDAY=MO
        color: #rrggbb
    """
    user_zone = ZoneInfo(await ctx.timezone())
    zone = zone_named(timezone) if timezone is not None else user_zone
    fields = EventFields(title=title, start=parse_when(start, "start", zone), all_day=all_day, timezone=timezone,
                         end=parse_when(end, "end", zone) if end is not None else None, rrule=rrule,
                         location=location, description=description, color=color, note_id=note_id,
                         project_id=project_id)
    row = await service.create_event(ctx.session, ctx.caller, fields)
    return await _view(ctx, row, user_zone)


@tool(group="calendar", title="Change an event", scope="write", idempotent=True,
      route=Route("PATCH", "/events/{event_id}"))
async def update_event(
    ctx: Context, event_id: EventId, occurrence: WhenText | None = None, title: Title | None = None,
    start: WhenText | None = None, end: WhenText | None = None, all_day: bool | None = None,
    rrule: Rule | None = None, location: Location | None = None,
    description: Description | None = None, color: Color | None = None, note_id: NoteId | None = None,
    project_id: RowId | None = None, clear: list[Clearable] | None = None,
) -> EventView:
    """Change an event (or one occurrence); omitted fields stay.

    Args:
        occurrence: From list_events.
    """
    user_zone = ZoneInfo(await ctx.timezone())
    fields = EventFields(
        title=title, start=parse_when(start, "start", user_zone) if start is not None else None,
        end=parse_when(end, "end", user_zone) if end is not None else None, all_day=all_day,
        rrule=rrule, location=location, description=description, color=color, note_id=note_id,
        project_id=project_id, clear=frozenset(clear or ()))
    when = parse_when(occurrence, "occurrence", user_zone) if occurrence is not None else None
    row = await service.update_event(ctx.session, ctx.caller, event_id, fields, occurrence=when)
    return await _view(ctx, row, user_zone)


@tool(group="calendar", title="Delete an event", scope="write", destructive=True, idempotent=False,
      route=Route("DELETE", "/events/{event_id}"))
async def delete_event(ctx: Context, event_id: EventId, occurrence: WhenText | None = None) -> EventDeleted:
    """Delete an event (or one occurrence).

    Args:
        occurrence: From list_events.
    """
    user_zone = ZoneInfo(await ctx.timezone())
    when = parse_when(occurrence, "occurrence", user_zone) if occurrence is not None else None
    await service.delete_event(ctx.session, ctx.caller, event_id, occurrence=when)
    return EventDeleted(id=event_id, occurrence=format_when(when, user_zone) if when is not None else None)


@tool(group="calendar", title="Get an event", scope="read", route=Route("GET", "/events/{event_id}"))
async def get_event(ctx: Context, event_id: EventId) -> EventView:
    """Read an event in full."""
    row = await service.get_event(ctx.session, ctx.caller, event_id)
    return await _view(ctx, row, ZoneInfo(await ctx.timezone()))


@tool(group="calendar", title="List events", scope="read", route=Route("GET", "/events"))
async def list_events(ctx: Context, start: WhenText | None = None, end: WhenText | None = None,
                      limit: PageSize = 100, cursor: Cursor = None) -> EventPage:
    """List events in a range by start, recurring ones as occurrences.

    Args:
        start: Default: today.
        end: Default: start+7 days.
    """
    user_zone = ZoneInfo(await ctx.timezone())
    since = _bound(parse_when(start, "start", user_zone), user_zone) if start is not None else \
        _bound(await ctx.today(), user_zone)
    until = _bound(parse_when(end, "end", user_zone), user_zone) if end is not None else since + timedelta(days=7)
    if not since < until <= since + timedelta(days=MAX_RANGE_DAYS):
        raise InvalidInput(f"end {until.astimezone(user_zone).isoformat()!r} must be after start "
                           f"{since.astimezone(user_zone).isoformat()!r}, by at most {MAX_RANGE_DAYS} days",
                           field="end")
    after = _after(decode_cursor(cursor, "events"))
    rows = await rows_between(ctx.session, ctx.caller, since, until)
    items: list[EventItem] = []
    last: tuple[datetime, int, datetime] | None = None
    for occurrence in occurrences_between(rows, since, until, user_zone):
        if after is not None and occurrence.place <= after:
            continue
        if len(items) == limit:
            assert last is not None
            return EventPage(items=items, next_cursor=encode_cursor("events", [
                last[0].isoformat(), last[1], "" if last[2] == NO_KEY else last[2].isoformat()]))
        items.append(_item(occurrence, user_zone))
        last = occurrence.place
    return EventPage(items=items)


def _bound(value: When, zone: ZoneInfo) -> datetime:
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    return datetime.combine(value, time(), tzinfo=zone).astimezone(UTC)


def _after(position: list[Any] | None) -> tuple[datetime, int, datetime] | None:
    if position is None:
        return None
    try:
        return _place(*position)
    except (TypeError, ValueError) as e:
        raise InvalidInput("cursor is not valid for this listing; pass next_cursor from the same call unchanged",
                           field="cursor") from e


def _place(start: str, event_id: int, key: str) -> tuple[datetime, int, datetime]:
    """A cursor's place (:attr:`Occurrence.place`): an instant, an id, a wall-clock key."""
    place = datetime.fromisoformat(start), int(event_id), datetime.fromisoformat(key) if key else NO_KEY
    if place[0].tzinfo is None or place[2].tzinfo is not None:
        raise ValueError(start, key)
    return place


def _item(o: Occurrence, zone: ZoneInfo) -> EventItem:
    row = o.row
    start = format_when(o.start, zone)
    occurrence = None
    if o.key is not None:  # a series' own occurrence starts at its key; an override may have moved
        occurrence = start if row.series_id is None else format_when(from_key(o.key, series_zone(row)), zone)
    # built from rows the calendar wrote: constructed, not validated again (a month is 500 of them)
    return EventItem.model_construct(
        event_id=o.event_id, title=row.title, start=start, end=format_when(o.end, zone), all_day=row.all_day,
        occurrence=occurrence, location=row.location, color=row.color, note_id=row.note_id,
        project_id=row.project_id)


async def _view(ctx: Context, row: CalendarEvent, zone: ZoneInfo) -> EventView:
    series_tz = series_zone(row)
    start: date | datetime
    end: date | datetime
    if row.all_day:
        assert row.start_date is not None and row.end_date is not None
        start, end = row.start_date, row.end_date
    else:
        assert row.start_at is not None and row.end_at is not None
        start, end = row.start_at, row.end_at
    changed: list[str] = []
    if row.rrule is not None:
        keys = (await ctx.session.execute(select(CalendarEvent.recurrence_id).where(
            CalendarEvent.series_id == row.id).order_by(CalendarEvent.recurrence_id))).scalars()
        changed = [format_when(from_key(k, series_tz), zone) for k in keys if k is not None]
    return EventView(
        id=row.series_id or row.id, title=row.title, start=format_when(start, zone), end=format_when(end, zone),
        all_day=row.all_day, timezone=row.timezone,
        occurrence=format_when(from_key(row.recurrence_id, series_tz), zone) if row.recurrence_id else None,
        rrule=row.rrule, exdates=[format_when(from_key(k, series_tz), zone) for k in row.exdates], changed=changed,
        description=row.description, location=row.location, color=row.color, note_id=row.note_id,
        project_id=row.project_id)
