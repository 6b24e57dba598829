"""Times of events: what callers write (ISO 8601, naive meaning the user's zone) and what they read
(ISO 8601 in the user's zone), and the UTC span a row covers.

A timed event is two instants and a zone; an all-day event two dates (end exclusive), which no
zone shifts. Series keys (an occurrence's original start, as iCalendar's RECURRENCE-ID and
EXDATE) are wall-clock times in the series' zone, midnight for an all-day series.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from fable_core.errors import InvalidInput
from fable_core.tools.clock import check_zone

__all__ = [
    "EARLIEST_OFFSET",
    "LATEST_OFFSET",
    "When",
    "as_key",
    "check_year",
    "day_start",
    "format_when",
    "from_key",
    "parse_when",
    "zone_named",
]

When = datetime | date
"""A start or end: an aware datetime (timed) or a date (all-day)."""

EARLIEST_OFFSET = timedelta(hours=14)  # a day begins this long before 00:00 UTC in the farthest east
LATEST_OFFSET = timedelta(hours=12)  # and ends this long after it in the farthest west
_FIRST_YEAR, _LAST_YEAR = 1900, 2200
_LONGEST_ZONE = 64
_LONGEST_WHEN = 40
_SPACED_OFFSET = re.compile(r"^(\d{4}-\d{2}-\d{2}T[\d:.]+) (\d{2}:?\d{2})$")


def zone_named(name: str, field: str = "timezone") -> ZoneInfo:
    """The IANA zone ``name``; InvalidInput naming it (and the zone it probably is) otherwise."""
    if len(name) > _LONGEST_ZONE:
        raise InvalidInput(f"{field} {name[:64]!r}... is not a known time zone (longer than {_LONGEST_ZONE} "
                           "characters)", field=field)
    try:
        return ZoneInfo(check_zone(name))
    except ValueError as e:
        raise InvalidInput(f"{field}: {e}", field=field, value=name[:64]) from None


def parse_when(text: str, field: str, zone: ZoneInfo) -> When:
    """``text`` as a date ('2026-12-05') or an aware date-time ('2026-12-05T09:00+01:00'; naive
    means ``zone``); InvalidInput naming the value otherwise."""
    value = text.strip()
    try:
        parsed: When = _iso(value)
    except ValueError:
        raise InvalidInput(f"{field} {text[:60]!r} is not an ISO 8601 date-time or date: write e.g. "
                           f"'2026-12-05T09:00', '2026-12-05T09:00+01:00' or '2026-12-05'",
                           field=field, value=text[:60]) from None
    return check_year(_aware(parsed, zone), field)


def _iso(value: str) -> When:
    if len(value) > _LONGEST_WHEN:
        raise ValueError(value)
    # an offset's "+" that a query string turned into a space ("...T09:00 01:00")
    value = _SPACED_OFFSET.sub(r"\1+\2", value)
    return date.fromisoformat(value) if len(value) <= 10 else datetime.fromisoformat(value)


def check_year(value: When, field: str) -> When:
    """``value`` if its year is one a calendar plans in (1900-2200); InvalidInput otherwise."""
    if not _FIRST_YEAR <= value.year <= _LAST_YEAR:
        raise InvalidInput(f"{field} {value.isoformat()!r} is outside the years {_FIRST_YEAR}-{_LAST_YEAR}",
                           field=field, value=value.isoformat())
    return value


def _aware(value: When, zone: ZoneInfo) -> When:
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=zone)
    return value


def format_when(value: When, zone: ZoneInfo) -> str:
    """``value`` as callers read it: a date as is, an instant in ``zone`` ('2026-12-05T09:00+01:00';
    seconds only when there are some)."""
    if not isinstance(value, datetime):
        return value.isoformat()
    local = value.astimezone(zone)
    return local.isoformat(timespec="minutes" if not local.second and not local.microsecond else "seconds")


def as_key(value: When, zone: ZoneInfo | None) -> datetime:
    """A series key: the wall-clock time of ``value`` in the series' zone (None: an all-day
    series, whose keys are dates at midnight)."""
    if isinstance(value, datetime):
        return value.astimezone(zone).replace(tzinfo=None) if zone is not None else value.replace(tzinfo=None)
    return datetime.combine(value, time())


def from_key(key: datetime, zone: ZoneInfo | None) -> When:
    """The start a series key stands for: an instant in the series' zone, or a date."""
    if zone is None:
        return key.date()
    return key.replace(tzinfo=zone).astimezone(UTC)


def day_start(day: date, zone: ZoneInfo) -> datetime:
    """The instant ``day`` begins in ``zone``."""
    return datetime.combine(day, time(), tzinfo=zone).astimezone(UTC)
