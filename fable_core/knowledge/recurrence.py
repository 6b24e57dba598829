"""Recurrence rules (RFC 5545 RRULE) for tasks, with every expansion bounded.

dateutil walks a rule period by period until year 9999 looking for its next date, and checks
UNTIL and COUNT only against dates that pass every BY part: a rule that never matches (the 30th
of February) cost seconds of event-loop time per completion. Here every expansion stops at a
horizon, a rule is accepted only if it occurs within it, and the next occurrence of a task is
found in milliseconds or not at all.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from datetime import MAXYEAR, date, datetime, time
from types import FunctionType, SimpleNamespace
from typing import Protocol, cast

import dateutil.rrule
from dateutil.rrule import DAILY, MONTHLY, WEEKLY, YEARLY, rrule, rrulestr

__all__ = ["RECURRENCE_HORIZON", "check_occurs", "expand", "first_occurrence", "next_occurrence", "parse_rrule"]

RECURRENCE_HORIZON = 10
"""Years a rule may go without an occurrence before it counts as never recurring. Ten covers
the longest natural gap, February 29 across a century that is not leap (2096 -> 2104)."""

# a leap year: any start will do for "can this ever occur"; naive, as rules run in wall-clock time
_SAMPLE_START = datetime(2000, 1, 1)  # noqa: DTZ001
_YEARS_PER_PERIOD = {YEARLY: 1.0, MONTHLY: 1 / 12, WEEKLY: 7 / 365, DAILY: 1 / 365}
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class _Fields(Protocol):
    """The private fields of a dateutil rrule read here (types-python-dateutil declares none)."""

    _freq: int
    _interval: int


def _fields(rule: rrule) -> _Fields:
    return cast("_Fields", rule)


def parse_rrule(rule: str, start: datetime) -> rrule:
    """``rule`` as a dateutil rrule from ``start``, or ValueError saying what is wrong.

    Only a lone RRULE: DTSTART would override the due date, and EXRULE/EXDATE/RDATE lines make
    a set, which dateutil walks to year 9999 when it excludes everything (15-19 s measured).
    INTERVAL must be positive: dateutil loops forever on 0 and fails mid-walk on negatives.
    """
    if len(rule.split()) != 1 or ":" in rule:
        raise ValueError("give one RRULE such as 'FREQ=WEEKLY;BYDAY=MO', without DTSTART, EXRULE, "
                         "EXDATE or RDATE lines: the due date is where it starts")
    try:
        parsed = rrulestr(rule, dtstart=start)
    except (ValueError, TypeError) as e:
        raise ValueError(f"not an RFC 5545 recurrence rule ({e})") from None
    if not isinstance(parsed, rrule):  # a lone rule always parses to one; a set must not pass
        raise ValueError("give one RRULE")  # noqa: TRY004 - pydantic reports ValueError as 422
    if (interval := _fields(parsed)._interval) < 1:
        raise ValueError(f"INTERVAL must be 1 or more, not {interval}")
    return parsed


def first_occurrence(rule: rrule, start: datetime, after: datetime | None = None) -> datetime | None:
    """The first date of ``rule`` (started at ``start``) later than ``after``, looking no further
    than RECURRENCE_HORIZON years, or two of the rule's intervals when those are longer."""
    fields = _fields(rule)
    reach = math.ceil(2 * fields._interval * _YEARS_PER_PERIOD.get(fields._freq, 0.0))
    last_year = start.year + max(RECURRENCE_HORIZON, reach)
    return next((d for d in expand(rule, last_year) if after is None or d > after), None)


def expand(rule: rrule, last_year: int) -> Iterator[datetime]:
    """dateutil's own expansion of ``rule``, ending with ``last_year`` instead of year 9999.

    dateutil checks UNTIL and COUNT only against dates that pass every BY part, so a rule that
    matches nothing walks period by period to 9999 however it is bounded: ``replace(until=...)``,
    ``between`` and ``xafter`` all took 0.3 s for FEB 30, 4-9 s for daily rules (dateutil issues
    #1094, #1393 ask for a limit; there is none). Its loop stops at ``datetime.MAXYEAR``, so this
    runs that very loop with MAXYEAR set to ``last_year``: same dates, bounded work (<= 10 ms for
    ten years of a daily rule). It relies on dateutil's private ``rrule._iter``;
    tests/core/knowledge/test_recurrence.py fails if that stops bounding it.
    """
    calendar = SimpleNamespace(date=date, datetime=datetime, MAXYEAR=min(last_year, MAXYEAR))
    private_iter = rrule._iter  # type: ignore[attr-defined]  # private, not in types-python-dateutil
    walk: Callable[[rrule], Iterator[datetime]] = FunctionType(
        private_iter.__code__, {**vars(dateutil.rrule), "datetime": calendar})
    return walk(rule)


def check_occurs(rule: str) -> None:
    """ValueError (in words) unless the rule's pattern, ignoring INTERVAL, COUNT and UNTIL,
    matches a date within RECURRENCE_HORIZON years: judged without a due date, which is
    ``next_occurrence``'s business."""
    pattern = parse_rrule(rule, _SAMPLE_START).replace(interval=1, count=None, until=None)
    if first_occurrence(pattern, _SAMPLE_START) is None:
        raise ValueError(_never_occurs(rule))


def _never_occurs(rule: str) -> str:
    """Why ``rule`` never occurs: in words when it asks for days its months do not have."""
    missing = _missing_days(rule)
    if missing:
        return f"{rule!r} never occurs (there is no {missing})"
    return f"{rule!r} never occurs within {RECURRENCE_HORIZON} years"


def _missing_days(rule: str) -> str | None:
    """"30 February"-style words when no BYMONTHDAY exists in any BYMONTH, else None."""
    parts = dict(part.split("=", 1) for part in rule.split(";") if "=" in part)
    try:
        months = [int(m) for m in parts["BYMONTH"].split(",")]
        days = [int(d) for d in parts["BYMONTHDAY"].split(",")]
    except (KeyError, ValueError):
        return None
    if any(not 1 <= m <= 12 or abs(d) <= _MONTH_DAYS[m - 1] for m in months for d in days):
        return None
    return " or ".join(f"{' or '.join(map(_day, days))} {_MONTHS[m - 1]}" for m in months)


def _day(day: int) -> str:
    return str(day) if day > 0 else f"day {day} of"


def next_occurrence(rule: str, due: date) -> date | None:
    """The first day after ``due`` the rule yields (counting from ``due``), or None.

    None also when no occurrence falls within the recurrence horizon (a few milliseconds of
    search, where dateutil alone walks to year 9999), and for a rule stored before parse_rrule
    refused it (INTERVAL=0 hangs dateutil, EXRULE lines make a set): that series ends rather
    than blocking completion. "Day after", not "moment after", so a stored rule naming an hour
    cannot spawn a copy due the same day.
    """
    start = datetime.combine(due, time())
    try:
        parsed = parse_rrule(rule, start)
    except ValueError:
        return None
    following = first_occurrence(parsed, start, after=datetime.combine(due, time.max))
    return following.date() if following else None
