"""Events as iCalendar VEVENTs and back (``icalendar``): what the sync sends and reads.

One event is one calendar object resource: a VCALENDAR holding its VEVENT (and the VTIMEZONE
its TZID names). A timed event is written in its own time zone (``DTSTART;TZID=Europe/Berlin``)
when it has one, so that a weekly event stays at 09:00 local time across daylight saving; an
all-day event is written as dates (``DTSTART;VALUE=DATE``, ``DTEND`` the day after its last).
``RRULE`` and ``EXDATE`` carry recurrence; ``COLOR`` (RFC 7986) the colour; ``LAST-MODIFIED``
the time of the local change, which the other side compares in a both-sides edit.

Reading, a resource's first VEVENT without ``RECURRENCE-ID`` is the event (a changed occurrence
of a recurring event, a VEVENT with ``RECURRENCE-ID``, is not kept: see docs/caldav.md); a
floating time (no zone) is read in the user's time zone; an event without ``DTEND`` lasts its
``DURATION``, or a day (all-day) or nothing (timed).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import icalendar

__all__ = ["Fields", "Unusable", "parse", "render", "same"]

PRODID = "-//Fable//CalDAV sync//EN"


class Unusable(ValueError):
    """A calendar object with no usable VEVENT (a VTODO, a broken DTSTART): skipped by the sync."""


@dataclass(slots=True)
class Fields:
    """An event's synced fields. ``start``/``end`` are aware UTC datetimes for a timed event (its
    ``timezone`` the zone it recurs in) and dates for an all-day one (``end`` exclusive: the day
    after the last); ``exdates`` likewise."""

    uid: str
    title: str
    start: datetime | date
    end: datetime | date
    all_day: bool
    timezone: str | None = None
    description: str = ""
    location: str = ""
    color: str | None = None
    rrule: str | None = None
    exdates: list[datetime | date] = field(default_factory=list)
    modified: datetime | None = None
    recurrence_id: datetime | date | None = None  # an override: the original start it replaces
    overrides: list[Fields] = field(default_factory=list)  # a series' occurrences changed on their own


def same(a: Fields, b: Fields) -> bool:
    """Whether two versions of an event say the same (whenever each was modified)."""
    return _unstamped(a) == _unstamped(b)


def _unstamped(f: Fields) -> Fields:
    """``f`` without what servers change in passing: times modified, whitespace around text."""
    return replace(f, modified=None, title=f.title.strip(), description=f.description.strip(),
                   location=f.location.strip(), overrides=[_unstamped(o) for o in f.overrides])


def render(f: Fields) -> str:
    """``f`` as a whole iCalendar object (text)."""
    cal = icalendar.Calendar()
    cal.add("prodid", PRODID)
    cal.add("version", "2.0")
    zone = _zone(f.timezone)
    stamp = f.modified or datetime.now(UTC)
    for one in (f, *f.overrides):
        cal.add_component(_vevent(one, zone, stamp))
    if zone is not None and not f.all_day:
        cal.add_missing_timezones()
    return str(cal.to_ical().decode())


def _vevent(f: Fields, zone: ZoneInfo | None, stamp: datetime) -> icalendar.Event:
    event = icalendar.Event()
    event.add("uid", f.uid)
    event.add("summary", f.title)
    if f.recurrence_id is not None:
        event.add("recurrence-id", _out(f.recurrence_id, zone))
    event.add("dtstart", _out(f.start, zone))
    event.add("dtend", _out(f.end, zone))
    if f.description:
        event.add("description", f.description)
    if f.location:
        event.add("location", f.location)
    if f.color:
        event.add("color", f.color)
    if f.rrule:
        event.add("rrule", icalendar.vRecur.from_ical(f.rrule))
    if f.exdates:
        event.add("exdate", [_out(d, zone) for d in f.exdates])
    event.add("dtstamp", stamp.astimezone(UTC))
    event.add("last-modified", stamp.astimezone(UTC))
    return event


def _zone(name: str | None) -> ZoneInfo | None:
    if not name or name == "UTC":
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def _out(value: datetime | date, zone: ZoneInfo | None) -> datetime | date:
    if isinstance(value, datetime):
        return value.astimezone(zone or UTC)
    return value


def parse(text: str, user_zone: str = "UTC") -> Fields:
    """The event in the iCalendar object ``text``; :class:`Unusable` if there is none."""
    try:
        cal = icalendar.Calendar.from_ical(text)
    except ValueError as e:
        raise Unusable(f"not an iCalendar object: {e}") from e
    events = cal.walk("VEVENT")
    masters = [c for c in events if c.get("recurrence-id") is None]
    if not masters:
        raise Unusable("no VEVENT in it")
    floating = ZoneInfo(user_zone)
    try:
        series = _fields(masters[0], floating)
    except (KeyError, ValueError, TypeError, AttributeError) as e:
        raise Unusable(f"its VEVENT cannot be read: {e}") from e
    if series.rrule is None:
        return series
    for component in events:
        if component.get("recurrence-id") is None or str(component.get("uid")) != series.uid:
            continue
        try:
            series.overrides.append(_override(component, series, floating))
        except (KeyError, ValueError, TypeError, AttributeError):
            continue  # a changed occurrence that cannot be read: the series without it
    series.overrides.sort(key=lambda o: _sort_key(o.recurrence_id))
    return series


def _override(component: Any, series: Fields, floating: ZoneInfo) -> Fields:
    one = _fields(component, floating)
    if one.all_day != series.all_day:
        raise ValueError("an occurrence is all-day or timed as its series is")
    key = component.decoded("recurrence-id")
    if series.all_day:
        key = key.date() if isinstance(key, datetime) else key
    else:
        key = _utc(key, floating) if isinstance(key, datetime) else datetime.combine(key, datetime.min.time(), UTC)
    return replace(one, recurrence_id=key, rrule=None, exdates=[], modified=None, timezone=series.timezone)


def _sort_key(value: datetime | date | None) -> str:
    return "" if value is None else value.isoformat()


def _fields(event: Any, floating: ZoneInfo) -> Fields:
    start = event.decoded("dtstart")
    all_day = not isinstance(start, datetime)
    if event.get("dtend") is not None:
        end = event.decoded("dtend")
    elif event.get("duration") is not None:
        end = start + event.decoded("duration")
    else:
        end = start + timedelta(days=1) if all_day else start
    zone = None
    if not all_day:
        tzid = event["dtstart"].params.get("TZID")
        if tzid and _zone(str(tzid)) is not None:
            zone = str(tzid)
        else:  # UTC ("...Z") recurs in UTC; a floating time is the user's
            zone = "UTC" if start.tzinfo is not None else str(floating.key)
        start, end = _utc(start, floating), _utc(end, floating)
    elif isinstance(end, datetime):
        end = end.date()
    if end < start:
        end = start
    rrule = event.get("rrule")
    modified = event.get("last-modified") or event.get("dtstamp")
    return Fields(
        uid=str(event["uid"]), title=str(event.get("summary", "")), start=start, end=end, all_day=all_day,
        timezone=zone, description=str(event.get("description", "")), location=str(event.get("location", "")),
        color=str(event["color"]) if event.get("color") else None,
        rrule=rrule.to_ical().decode() if rrule is not None else None,
        exdates=_exdates(event, all_day, floating),
        modified=_utc(modified.dt, ZoneInfo("UTC")) if modified is not None else None)


def _utc(value: datetime, floating: ZoneInfo) -> datetime:
    if value.tzinfo is None:
        value = value.replace(tzinfo=floating)
    return value.astimezone(UTC)


def _exdates(event: Any, all_day: bool, floating: ZoneInfo) -> list[datetime | date]:
    found: list[datetime | date] = []
    raw = event.get("exdate")
    for prop in raw if isinstance(raw, list) else [raw] if raw is not None else []:
        for item in prop.dts:
            value = item.dt
            if all_day:
                found.append(value.date() if isinstance(value, datetime) else value)
            else:
                found.append(_utc(value, floating) if isinstance(value, datetime)
                             else datetime.combine(value, datetime.min.time(), UTC))
    return found
