"""Argument types shared by the knowledge tools: constraints live here, once."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from datetime import MAXYEAR, date, datetime
from types import FunctionType, SimpleNamespace
from typing import Annotated, Literal

import dateutil.rrule
from dateutil.rrule import DAILY, MONTHLY, WEEKLY, YEARLY, rrule, rrulestr
from pydantic import AfterValidator, Field, StringConstraints

from fable_core.knowledge.paging import MAX_CURSOR

__all__ = [
    "RECURRENCE_HORIZON",
    "Body",
    "Color",
    "Cursor",
    "Kind",
    "Limit",
    "NoteId",
    "Priority",
    "ProjectRef",
    "RecurrenceRule",
    "RowId",
    "Status",
    "Tag",
    "Tags",
    "Title",
    "first_occurrence",
    "parse_rrule",
]

MAX_TITLE = 300
MAX_BODY = 1_000_000
MAX_TAGS = 50

RowId = Annotated[int, Field(ge=1, le=2**31 - 1)]
NoteId = Annotated[int, Field(ge=1, le=2**31 - 1, description="Id of the note or task.")]
Title = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TITLE)]
Body = Annotated[str, StringConstraints(max_length=MAX_BODY)]
Status = Literal["todo", "in_progress", "done", "cancelled"]
Priority = Literal["none", "low", "medium", "high"]
Kind = Literal["note", "task", "all"]
Limit = Annotated[int, Field(ge=1, le=200, description="Page size (1-200).")]
Cursor = Annotated[
    str | None,
    Field(max_length=MAX_CURSOR, description="`next_cursor` from the previous page; omit for the first."),
]
Color = Annotated[str, StringConstraints(pattern=r"^#[0-9a-fA-F]{6}$")]

_TAG = re.compile(r"^[\w][\w\-./]*$", re.UNICODE)


def _normalise_tag(tag: str) -> str:
    tag = tag.strip().lstrip("#").strip("/").lower()
    if not tag or len(tag) > 64 or not _TAG.match(tag) or "//" in tag:
        raise ValueError(
            f"tag {tag!r} must be 1-64 letters, digits, '-', '_', '.' or '/' (for hierarchy)"
        )
    return tag


def _normalise_tags(tags: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for tag in tags:
        seen[_normalise_tag(tag)] = None
    if len(seen) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags")
    return list(seen)


Tag = Annotated[str, AfterValidator(_normalise_tag)]
Tags = Annotated[
    list[str],
    AfterValidator(_normalise_tags),
    Field(description="Tags, lower-cased; '/' makes a hierarchy: 'work/acme' is under 'work'."),
]


_UTC_UNTIL = re.compile(r"(UNTIL=\d{8}(?:T\d{6})?)Z")
_SUB_DAILY = re.compile(r"FREQ=(HOURLY|MINUTELY|SECONDLY)\b")
_TIME_OF_DAY = re.compile(r"\bBY(HOUR|MINUTE|SECOND)=")

RECURRENCE_HORIZON = 10
"""Years a rule may go without an occurrence before it counts as never recurring. Ten covers
the longest natural gap, February 29 across a century that is not leap (2096 -> 2104)."""

_SAMPLE_START = datetime(2000, 1, 1)  # a leap year: any start will do for "can this ever occur"
_YEARS_PER_PERIOD = {YEARLY: 1.0, MONTHLY: 1 / 12, WEEKLY: 7 / 365, DAILY: 1 / 365}
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


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
    if parsed._interval < 1:
        raise ValueError(f"INTERVAL must be 1 or more, not {parsed._interval}")
    return parsed


def first_occurrence(rule: rrule, start: datetime, after: datetime | None = None) -> datetime | None:
    """The first date of ``rule`` (started at ``start``) later than ``after``, looking no further
    than RECURRENCE_HORIZON years, or two of the rule's intervals when those are longer."""
    reach = math.ceil(2 * rule._interval * _YEARS_PER_PERIOD.get(rule._freq, 0.0))
    last_year = start.year + max(RECURRENCE_HORIZON, reach)
    return next((d for d in _expand(rule, last_year) if after is None or d > after), None)


def _expand(rule: rrule, last_year: int) -> Iterator[datetime]:
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
    walk = FunctionType(rrule._iter.__code__, {**vars(dateutil.rrule), "datetime": calendar})
    return walk(rule)


def _check_rrule(rule: str) -> str:
    """Normalise an RRULE (upper case, no "RRULE:" prefix, UNTIL as a floating date-time, since
    tasks recur by date) and refuse what does not parse, recurs more than daily, names a time of
    day or never occurs.

    "Never" is judged without the due date (a type knows no other field): the rule's pattern,
    ignoring INTERVAL, COUNT and UNTIL, must match a date within RECURRENCE_HORIZON years.
    Whether it does from a given due date is ``next_occurrence``'s business.
    """
    rule = rule.strip().upper()
    rule = rule.removeprefix("RRULE:")
    rule = _UTC_UNTIL.sub(r"\1", rule)
    if _SUB_DAILY.search(rule):
        raise ValueError("tasks recur at most daily: use FREQ=DAILY, WEEKLY, MONTHLY or YEARLY")
    if _TIME_OF_DAY.search(rule):  # and every second of the day listed costs 30 ms a parse
        raise ValueError("tasks recur by date: leave out BYHOUR, BYMINUTE and BYSECOND")
    pattern = parse_rrule(rule, _SAMPLE_START).replace(interval=1, count=None, until=None)
    if first_occurrence(pattern, _SAMPLE_START) is None:
        raise ValueError(_never_occurs(rule))
    return rule


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


RecurrenceRule = Annotated[
    str,
    StringConstraints(max_length=500),
    AfterValidator(_check_rrule),
    Field(description="RFC 5545 RRULE, e.g. 'FREQ=WEEKLY;BYDAY=MO'. Needs a due_date."),
]

ProjectRef = Annotated[
    str | None,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=200),
    Field(description="Project by name (exact, then partial, then fuzzy match); alternative to project_id."),
]

DateArg = date
