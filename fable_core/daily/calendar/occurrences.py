"""What falls in a range: single events, the occurrences of recurring ones (less the skipped and
the changed), and the changed occurrences themselves, merged in start order and paged.

One query reads the rows whose UTC span meets the range, with every override of the recurring
ones among them (an occurrence moved out of the range must still hide its original). Each series
yields its starts lazily (:func:`fable_core.daily.calendar.recurrence.starts`) and the streams are
merged, so a page costs its own occurrences, not the whole range's.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, time, timedelta
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo

from sqlalchemy import and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.daily.calendar.recurrence import starts
from fable_core.daily.calendar.times import LATEST_OFFSET, When, day_start
from fable_core.db.models import CalendarEvent
from fable_core.tools.access import owned_by
from fable_core.tools.caller import Caller

__all__ = ["COLUMNS", "NO_KEY", "Occurrence", "duration", "first_key", "last_key", "occurrences_between", "occurs",
           "rows_between", "series_zone"]

COLUMNS = (CalendarEvent.id, CalendarEvent.series_id, CalendarEvent.recurrence_id, CalendarEvent.title,
           CalendarEvent.location, CalendarEvent.color, CalendarEvent.all_day, CalendarEvent.start_at,
           CalendarEvent.end_at, CalendarEvent.start_date, CalendarEvent.end_date, CalendarEvent.timezone,
           CalendarEvent.rrule, CalendarEvent.exdates, CalendarEvent.span_end, CalendarEvent.note_id,
           CalendarEvent.project_id)
NO_KEY = datetime(1, 1, 1)  # noqa: DTZ001 - a single event's place among keys (wall-clock times)
_MARGIN = timedelta(days=1)  # wall-clock bounds are widened by this much (zones, DST), then judged exactly


class Occurrence(NamedTuple):
    """One occurrence: the event it belongs to (a series' id for its occurrences), the row whose
    fields it shows (the event, or the override that changed it), its times and, for a
    recurring event's occurrence, its key (original wall-clock start in the series' zone).
    ``begins``/``ends`` are its instants (an all-day one's in the listing's zone). A tuple: a
    month view makes a thousand of them."""

    event_id: int
    row: Any
    start: When  # an aware datetime, or a date for an all-day event
    end: When
    key: datetime | None
    begins: datetime
    ends: datetime

    @property
    def place(self) -> tuple[datetime, int, datetime]:
        """Where it stands in a listing: by start, then event, then key."""
        return self.begins, self.event_id, self.key or NO_KEY


def series_zone(row: Any) -> ZoneInfo | None:
    """The zone a row's times and keys are in (None: all-day)."""
    return None if row.all_day else ZoneInfo(row.timezone)


def first_key(row: Any) -> datetime:
    """The wall-clock start of a row in its zone (midnight of its date, all-day)."""
    if row.all_day:
        return datetime.combine(row.start_date, time())
    start: datetime = row.start_at
    return start.astimezone(ZoneInfo(row.timezone)).replace(tzinfo=None)


def duration(row: Any) -> timedelta:
    length: timedelta = (row.end_date - row.start_date) if row.all_day else (row.end_at - row.start_at)
    return length


def last_key(row: Any) -> datetime | None:
    """The last start of a series that ends, read back from its span (None: endless)."""
    if row.span_end is None:
        return None
    if row.all_day:
        return datetime.combine((row.span_end - LATEST_OFFSET).date() - duration(row), time())
    end: datetime = row.span_end
    return (end - duration(row)).astimezone(ZoneInfo(row.timezone)).replace(tzinfo=None)


def occurs(row: Any, key: datetime) -> bool:
    """Whether the series ``row`` has an occurrence at ``key`` (skipped ones aside)."""
    if key in row.exdates:
        return False
    return next(starts(row.rrule, first_key(row), series_zone(row), last_key(row), key,
                       key + timedelta(microseconds=1)), None) == key


def _series(row: Any, since: datetime, until: datetime, hidden: set[datetime],
            zone: ZoneInfo) -> Iterator[Occurrence]:
    series_tz = series_zone(row)
    length = duration(row)
    local_zone = series_tz or zone
    low = since.astimezone(local_zone).replace(tzinfo=None) - length - _MARGIN
    high = until.astimezone(local_zone).replace(tzinfo=None) + _MARGIN
    skipped = hidden.union(row.exdates)
    for key in starts(row.rrule, first_key(row), series_tz, last_key(row), low, high):
        if key in skipped:
            continue
        if series_tz is None:
            day = key.date()
            yield Occurrence(row.id, row, day, day + length, key, day_start(day, zone), day_start(day + length, zone))
        else:
            start = key.replace(tzinfo=series_tz).astimezone(UTC)
            yield Occurrence(row.id, row, start, start + length, key, start, start + length)


def _single(row: Any, zone: ZoneInfo) -> Occurrence:
    event_id, key = (row.series_id, row.recurrence_id) if row.series_id is not None else (row.id, None)
    if row.all_day:
        return Occurrence(event_id, row, row.start_date, row.end_date, key, day_start(row.start_date, zone),
                          day_start(row.end_date, zone))
    return Occurrence(event_id, row, row.start_at, row.end_at, key, row.start_at, row.end_at)


async def rows_between(session: AsyncSession, caller: Caller, since: datetime, until: datetime) -> list[Any]:
    """The caller's rows whose span meets [since, until), and every override of the recurring
    ones among them."""
    meets = [CalendarEvent.span_start < until, or_(CalendarEvent.span_end.is_(None), CalendarEvent.span_end > since)]
    recurring = select(CalendarEvent.id).where(owned_by(CalendarEvent, caller), CalendarEvent.rrule.is_not(None),
                                               *meets)
    stmt = select(*COLUMNS).where(owned_by(CalendarEvent, caller),
                                  or_(and_(*meets), CalendarEvent.series_id.in_(recurring.scalar_subquery())))
    return list((await session.execute(stmt)).all())


def occurrences_between(rows: Iterable[Any], since: datetime, until: datetime, zone: ZoneInfo) -> Iterator[Occurrence]:
    """The occurrences of ``rows`` (from :func:`rows_between`) that meet [since, until), in
    listing order (:attr:`Occurrence.place`, all-day days in ``zone``); lazily, so a page costs
    its own occurrences."""
    rows = list(rows)
    changed: dict[int, set[datetime]] = {}
    for row in rows:
        if row.series_id is not None:
            changed.setdefault(row.series_id, set()).add(row.recurrence_id)
    streams: list[Iterable[Occurrence]] = [
        _series(row, since, until, changed.get(row.id, set()), zone) for row in rows if row.rrule is not None]
    streams.append(sorted((_single(row, zone) for row in rows if row.rrule is None), key=_place))
    for o in heapq.merge(*streams, key=_place):
        if o.begins < until and (o.ends > since or o.ends == o.begins == since):
            yield o


def _place(o: Occurrence) -> tuple[datetime, int, datetime]:
    return o.place
