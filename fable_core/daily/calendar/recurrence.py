"""Recurring events: an RRULE checked once, when it is written, and the starts of a series in a
range found without walking the series from its beginning.

Expansion is :func:`fable_core.knowledge.recurrence.expand` (dateutil's own loop, bounded by a
year), run on wall-clock times in the series' zone, so a 9:00 meeting stays at 9:00 across DST
changes. A series that began long ago is restarted at the last period boundary before the range
(its INTERVAL kept in step, the BY parts its first start implied written out), so a month of a
ten-year-old daily series costs what a month of a new one does; COUNT becomes the UNTIL of its
last occurrence (found when the rule was written) for the same reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import MAXYEAR, UTC, date, datetime, timedelta
from itertools import islice
from typing import Any, Literal
from zoneinfo import ZoneInfo

from dateutil.rrule import DAILY, MONTHLY, WEEKLY, YEARLY, rrule, weekday, weekdays

from fable_core.knowledge.recurrence import check_occurs, expand, first_occurrence, parse_rrule

__all__ = ["COUNT_YEARS", "MAX_COUNT", "MAX_RULE", "check_rule", "last_start", "starts"]

MAX_COUNT = 1000
COUNT_YEARS = 50
"""Years from its start within which a series' COUNT must run out: finding its last occurrence
walks them (25 ms for a daily rule that matches only 29 February, where year 9999 took 2 s)."""
MAX_RULE = 500
_FREQS = ("DAILY", "WEEKLY", "MONTHLY", "YEARLY")
_PARTS = ("FREQ", "INTERVAL", "COUNT", "UNTIL", "BYDAY", "BYMONTHDAY", "BYYEARDAY", "BYWEEKNO", "BYMONTH",
          "BYSETPOS", "WKST")
_DAY_PARTS = frozenset({"BYDAY", "BYMONTHDAY", "BYYEARDAY", "BYWEEKNO"})
_TIME_PARTS = ("BYHOUR", "BYMINUTE", "BYSECOND")
_WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
_EXAMPLE = "FREQ=WEEKLY;BYDAY=MO,WE"
_FREQ_CODES: dict[str, Literal[0, 1, 2, 3, 4, 5, 6]] = {"DAILY": DAILY, "WEEKLY": WEEKLY, "MONTHLY": MONTHLY,
                                                        "YEARLY": YEARLY}
_NUMBERS = {"BYMONTHDAY": "bymonthday", "BYYEARDAY": "byyearday", "BYWEEKNO": "byweekno",
            "BYMONTH": "bymonth", "BYSETPOS": "bysetpos"}


def parts_of(rule: str) -> dict[str, str]:
    """The NAME=VALUE parts of a checked rule, in order."""
    return dict(part.split("=", 1) for part in rule.split(";") if part)


def check_rule(text: str) -> str:
    """``text`` as a stored rule (upper case, no 'RRULE:' prefix), or ValueError in words: one
    RRULE of daily or slower frequency, at the start's time of day, that occurs at all."""
    if len(text) > MAX_RULE:
        raise ValueError(f"RRULE {text[:60]!r}... is longer than {MAX_RULE} characters")
    rule = text.strip().upper().removeprefix("RRULE:")
    if not rule or len(rule.split()) != 1 or ":" in rule:
        raise ValueError(f"{text[:80]!r} is not one RRULE: write e.g. {_EXAMPLE!r} (no DTSTART, EXDATE or RDATE: "
                         "the event's start is where it starts, exceptions are deleted occurrences)")
    parts: dict[str, str] = {}
    for part in filter(None, rule.split(";")):
        name, equals, value = part.partition("=")
        if not equals or not value:
            raise ValueError(f"{part!r} in {rule!r} is not NAME=VALUE, e.g. {_EXAMPLE!r}")
        if name in _TIME_PARTS:
            raise ValueError(f"events recur at their start's time of day: leave {name} out of {rule!r}")
        if name not in _PARTS:
            raise ValueError(f"{name!r} is not an RRULE part this calendar knows: use {', '.join(_PARTS)}")
        parts[name] = value
    _check_values(rule, parts)
    try:
        check_occurs(_floating(rule, None))
    except ValueError as e:
        raise ValueError(str(e) if repr(rule) in str(e) else f"RRULE {rule!r}: {e}") from None
    return rule


def _check_values(rule: str, parts: dict[str, str]) -> None:
    freq = parts.get("FREQ")
    if freq not in _FREQS:
        raise ValueError(f"RRULE {rule!r} needs FREQ=DAILY, WEEKLY, MONTHLY or YEARLY (events recur at most daily)")
    if "COUNT" in parts and "UNTIL" in parts:
        raise ValueError(f"RRULE {rule!r} has both COUNT and UNTIL: keep one")
    count = parts.get("COUNT")
    if count is not None and not (count.isdigit() and 1 <= int(count) <= MAX_COUNT):
        raise ValueError(f"COUNT={count} in {rule!r} must be 1 to {MAX_COUNT} (or use UNTIL)")
    until = parts.get("UNTIL")
    if until is not None:
        try:
            _until(until)
        except ValueError:
            raise ValueError(f"UNTIL={until} in {rule!r} is not a date (20261231) or date-time "
                             "(20261231T170000Z)") from None


def _until(value: str) -> datetime:
    if len(value) == 8:
        return datetime.strptime(value, "%Y%m%d")  # noqa: DTZ007 - a floating date, as the rule runs
    if value.endswith("Z"):
        return datetime.strptime(value, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    return datetime.strptime(value, "%Y%m%dT%H%M%S")  # noqa: DTZ007 - floating: the series' zone


def _floating(rule: str, zone: ZoneInfo | None) -> str:
    """``rule`` with a UTC UNTIL written as wall-clock time in ``zone`` (the date, for an all-day
    series): dateutil expands wall-clock starts and refuses an aware UNTIL beside them."""
    if "Z" not in rule:
        return rule
    parts = parts_of(rule)
    _float_until(parts, zone)
    return ";".join(f"{k}={v}" for k, v in parts.items())


def _float_until(parts: dict[str, str], zone: ZoneInfo | None) -> None:
    until = parts.get("UNTIL")
    if until is None or not until.endswith("Z"):
        return
    moment = _until(until)
    local = moment.astimezone(zone).replace(tzinfo=None) if zone is not None else moment.replace(tzinfo=None)
    parts["UNTIL"] = local.strftime("%Y%m%d") if zone is None else local.strftime("%Y%m%dT%H%M%S")


def last_start(rule: str, first: datetime, zone: ZoneInfo | None) -> datetime | None:
    """The wall-clock start of the series' last occurrence (for UNTIL, a bound no later one
    passes; None: it never ends); ValueError when the rule yields nothing from ``first``."""
    floating = _floating(rule, zone)
    parsed = parse_rrule(floating, first)
    if first_occurrence(parsed, first) is None:
        raise ValueError(f"RRULE {rule!r} has no occurrence from the event's start")
    parts = parts_of(floating)
    if "COUNT" in parts:
        count, last_year = int(parts["COUNT"]), min(first.year + COUNT_YEARS, MAXYEAR)
        found = list(islice(expand(parsed, last_year), count))
        if len(found) < count:
            raise ValueError(f"COUNT={count} of RRULE {rule!r} runs past {last_year}: give a smaller COUNT or an "
                             "UNTIL")
        return found[-1]
    if "UNTIL" in parts:
        until = _until(parts["UNTIL"])
        return until if len(parts["UNTIL"]) > 8 else until + timedelta(days=1) - timedelta(microseconds=1)
    return None


def starts(rule: str, first: datetime, zone: ZoneInfo | None, last: datetime | None, since: datetime,
           until: datetime) -> Iterator[datetime]:
    """The wall-clock starts of the series from ``first`` that fall in [since, until), in order
    (``last`` from :func:`last_start`)."""
    parts = parts_of(rule)
    _float_until(parts, zone)
    if "COUNT" in parts:
        del parts["COUNT"]
        if last is None:
            return
        parts["UNTIL"] = last.strftime("%Y%m%dT%H%M%S")
    if not _DAY_PARTS & parts.keys():  # what the first start implied, said, so a restart keeps it
        if parts["FREQ"] == "WEEKLY":
            parts["BYDAY"] = _WEEKDAYS[first.weekday()]
        elif parts["FREQ"] in ("MONTHLY", "YEARLY"):
            parts["BYMONTHDAY"] = str(first.day)
            if parts["FREQ"] == "YEARLY":
                parts.setdefault("BYMONTH", str(first.month))
    rule_now = _built(parts, _restart(parts, first, since))
    for start in expand(rule_now, min(until.year, MAXYEAR)):  # no later year can hold a start before until
        if start >= until:
            return
        if start >= since:
            yield start


def _built(parts: dict[str, str], dtstart: datetime) -> rrule:
    """dateutil's rrule of checked ``parts`` from ``dtstart``: what ``rrulestr`` builds, without
    parsing text again for every range (``tests/calendar/test_series_recurrence.py`` holds them equal)."""
    options: dict[str, Any] = {"dtstart": dtstart, "interval": int(parts.get("INTERVAL", "1"))}
    for name, value in parts.items():
        if name == "UNTIL":
            options["until"] = _until(value)
        elif name == "WKST":
            options["wkst"] = _WEEKDAYS.index(value)
        elif name == "BYDAY":
            options["byweekday"] = [_weekday(day) for day in value.split(",")]
        elif name in _NUMBERS:
            options[_NUMBERS[name]] = [int(n) for n in value.split(",")]
    return rrule(_FREQ_CODES[parts["FREQ"]], **options)


def _weekday(text: str) -> weekday:
    day = weekdays[_WEEKDAYS.index(text[-2:])]
    return day(int(text[:-2])) if len(text) > 2 else day


def _restart(parts: dict[str, str], first: datetime, since: datetime) -> datetime:
    """The start of the series' last period (a multiple of INTERVAL after its first) that begins
    no later than ``since``; ``first`` when that is the first period."""
    interval = int(parts.get("INTERVAL", "1"))
    freq = parts["FREQ"]
    if freq == "DAILY":
        steps = (since.date() - first.date()).days // interval
        return first + timedelta(days=steps * interval) if steps > 0 else first
    if freq == "WEEKLY":
        wkst = _WEEKDAYS.index(parts.get("WKST", "MO"))
        week = _week_start(first.date(), wkst)
        steps = (_week_start(since.date(), wkst) - week).days // 7 // interval
        return datetime.combine(week + timedelta(weeks=steps * interval), first.time()) if steps > 0 else first
    if freq == "MONTHLY":
        steps = ((since.year - first.year) * 12 + since.month - first.month) // interval
        if steps <= 0:
            return first
        month = first.month - 1 + steps * interval
        return datetime.combine(date(first.year + month // 12, month % 12 + 1, 1), first.time())
    steps = (since.year - first.year) // interval
    return datetime.combine(date(first.year + steps * interval, 1, 1), first.time()) if steps > 0 else first


def _week_start(day: date, wkst: int) -> date:
    return day - timedelta(days=(day.weekday() - wkst) % 7)
