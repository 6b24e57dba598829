"""Quick add: one line of text as a task's fields, the way people type a task.

    pay rent every month on the 1st p1 #home   title "pay rent", FREQ=MONTHLY;BYMONTHDAY=1,
                                               due the next 1st, priority high, tag home
    call Anna tomorrow 5pm                     due tomorrow, at 17:00
    review budget next monday +Work            due the coming Monday, project "Work"
    water plants in 3 days                     due three days from today

What is recognised (anywhere in the line; the rest is the title):

- priority ``p1`` (high), ``p2`` (medium), ``p3`` (low), ``p4`` (none); ``!!!`` / ``!!`` / ``!``;
- tags ``#home``, ``#work/ops``; a project ``+Work``;
- recurrence in the words :mod:`.recurrence_words` knows ("every weekday", "every 2 weeks",
  "every month on the 15th", "daily"...); without a date, the task is due on the rule's first
  day from today;
- a date: today, tonight, tomorrow, (next) monday..sunday (the coming one, never today), next
  week (its Monday), next month (its 1st), in N days/weeks/months, in a week, ISO 2026-12-24,
  "dec 24", "24 december", "december 24th", "on the 15th" (the next 15th, today counts);
- a time: 5pm, 5:30 pm, 17:00, at 9, noon. Tasks are due on a date: the time is returned apart
  (``due_time``) for the caller to keep where it wants.

The parse is pure (no database, no clock but the ``today`` given): a table of phrases tests it.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from itertools import islice

from fable_core.knowledge.recurrence import first_occurrence, next_occurrence, parse_rrule
from fable_core.knowledge.recurrence_words import rule_from_words
from fable_core.knowledge.types import Priority

__all__ = ["QuickTask", "parse_quick"]

_PRIORITY: dict[str, Priority] = {"p1": "high", "p2": "medium", "p3": "low", "p4": "none",
                                  "!!!": "high", "!!": "medium", "!": "low"}
_WEEKDAYS = {name: i for i, names in enumerate((
    ("monday", "mon"), ("tuesday", "tue", "tues"), ("wednesday", "wed"), ("thursday", "thu", "thur", "thurs"),
    ("friday", "fri"), ("saturday", "sat"), ("sunday", "sun"))) for name in names}
_MONTHS = {name: i + 1 for i, full in enumerate(calendar.month_name[1:]) for name in (full.lower(), full.lower()[:3])}
_MONTHS["sept"] = 9
_FULL_WEEKDAY = "|".join(calendar.day_name).lower()
_WEEKDAY = "|".join(sorted(_WEEKDAYS, key=len, reverse=True))
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_UNIT_DAYS = {"day": 1, "week": 7}
_RULE_START = re.compile(r"\b(?:every|each|daily|weekly|monthly|yearly|annually|fortnightly|weekdays|weekends)\b")
_TAG = re.compile(r"(?<!\S)#([\w][\w\-./]*)", re.UNICODE)
_PROJECT = re.compile(r"(?<!\S)\+([\w][\w\-.]*)", re.UNICODE)
_PROJECT_WORDS = 8  # the most words a +Project Name is read from
_WORD = re.compile(r"\S+")
_PRIO = re.compile(r"(?<!\S)(p[1-4]|!{1,3})(?!\S)", re.IGNORECASE)
_TIME = re.compile(
    r"(?<!\S)(?:at\s+)?(?:(\d{1,2})(?::(\d{2}))?\s*(am|pm)|(\d{1,2}):(\d{2})|noon|midnight)(?!\S)"
    r"|(?<!\S)at\s+(\d{1,2})(?!\S)", re.IGNORECASE)
_DATES: list[tuple[re.Pattern[str], str]] = [(re.compile(p, re.IGNORECASE), kind) for p, kind in (
    (r"\b(\d{4})-(\d{2})-(\d{2})\b", "iso"),
    (r"\b(?:on\s+)?(?:the\s+)?" + _DAY + r"\s+(?:of\s+)?(" + _MONTH + r")\b(?:\s+(\d{4}))?", "day_month"),
    (r"\b(?:on\s+)?(" + _MONTH + r")\s+" + _DAY + r"\b(?:,?\s+(\d{4}))?", "month_day"),
    (r"\bin\s+(\d{1,3}|a|an|one|two|three|four|five|six|seven)\s+(day|week|month)s?\b", "in"),
    (r"\bnext\s+(week|month)\b", "next_unit"),
    (r"\b(?:(?:on|next|this)\s+)?(" + _FULL_WEEKDAY + r")\b", "weekday"),
    (r"\b(?:on|next|this)\s+(" + _WEEKDAY + r")\b", "weekday"),  # "sun", "sat" alone are words
    (r"\b(today|tonight|tomorrow|tmrw|tmr)\b", "relative"),
    (r"\b(?:on\s+)?the\s+(\d{1,2})(?:st|nd|rd|th)\b", "nth"),  # the next 15th (today counts)
)]
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}


@dataclass
class QuickTask:
    """What a line of quick add says; ``title`` is what is left once the rest was read."""

    title: str
    due_date: date | None = None
    due_time: time | None = None
    recurrence_rule: str | None = None
    next_occurrence: date | None = None
    priority: Priority | None = None
    tags: list[str] = field(default_factory=list)
    project: str | None = None
    when_words: list[str] = field(default_factory=list)  # the time and date as written, in that order


def parse_quick(text: str, today: date, projects: Sequence[str] = ()) -> QuickTask:
    """Read a task's fields out of ``text`` (see the module's docstring), relative to ``today``;
    ``+Name`` takes as many of the words after it as make one of ``projects`` (the caller's
    project titles: ``+Kitchen renovation``), else the one word."""
    rest = " " + " ".join(text.split()) + " "
    tags = [m.lower().rstrip("./") for m in _TAG.findall(rest)]
    rest = _TAG.sub(" ", rest)
    named, rest = _projects(rest, {" ".join(p.casefold().split()): p for p in projects})
    priority = None
    if found := _PRIO.search(rest):
        priority = _PRIORITY[found.group(1).lower()]
        rest = _cut(rest, found)
    rule, rest = _recurrence(rest)
    due_time, when = None, []
    if found := _TIME.search(rest):
        due_time = _time_of(found)
        rest = _cut(rest, found)
        when.append(found.group().strip())
    due, rest, said = _date(rest, today)
    when += [said] if said else []
    if rule is not None and due is None:
        due = _first_day(rule, today)
    title = " ".join(rest.split()).strip(" ,;-")
    return QuickTask(
        title=title, due_date=due, due_time=due_time, recurrence_rule=rule, priority=priority,
        next_occurrence=next_occurrence(rule, due) if rule and due else None,
        tags=list(dict.fromkeys(t for t in tags if t)), project=named[-1] if named else None, when_words=when,
    )


def _projects(text: str, known: dict[str, str]) -> tuple[list[str], str]:
    """The projects ``text`` names with ``+`` (the longest known title the words after it spell,
    else the one word) and the text without them."""
    named: list[str] = []
    out, last = [], 0
    for found in _PROJECT.finditer(text):
        if found.start() < last:
            continue  # a word of a project name taken already
        after = list(islice(_WORD.finditer(text, found.end()), _PROJECT_WORDS - 1))
        end, title = found.end(), known.get(found.group(1).casefold(), found.group(1))
        for n in range(len(after), 0, -1):
            longer = known.get(" ".join([found.group(1), *(w.group(0) for w in after[:n])]).casefold())
            if longer is not None:
                end, title = after[n - 1].end(), longer
                break
        named.append(title)
        out += [text[last:found.start()], " "]
        last = end
    out.append(text[last:])
    return named, "".join(out)


def _cut(text: str, found: re.Match[str]) -> str:
    return text[:found.start()] + " " + text[found.end():]


def _recurrence(text: str) -> tuple[str | None, str]:
    """The longest run of words from a recurrence word that reads as a rule, and the rest."""
    for start in _RULE_START.finditer(text.lower()):
        words = text[start.start():].split()
        for n in range(len(words), 0, -1):
            try:
                rule = rule_from_words(" ".join(words[:n]))
            except ValueError:
                continue
            phrase = re.compile(r"\s+".join(re.escape(w) for w in words[:n]))
            found = phrase.search(text, start.start())
            assert found is not None
            return rule, _cut(text, found)
    return None, text


def _time_of(found: re.Match[str]) -> time:
    hour, minute, half, hour24, minute24, bare = found.groups()
    said = found.group().lower()
    if said.endswith("noon"):
        return time(12)
    if said.endswith("midnight"):
        return time(0)
    if half:
        h = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
        return time(min(h, 23), min(int(minute or 0), 59))
    if hour24:
        return time(min(int(hour24), 23), min(int(minute24), 59))
    return time(min(int(bare), 23))


def _date(text: str, today: date) -> tuple[date | None, str, str]:
    """The first date ``text`` says, the text without it, and its words as written."""
    for pattern, kind in _DATES:
        for found in pattern.finditer(text):
            day = _day_of(kind, found, today)
            if day is not None:
                return day, _cut(text, found), found.group().strip()
    return None, text, ""


def _day_of(kind: str, found: re.Match[str], today: date) -> date | None:
    g = [x.lower() if x else x for x in found.groups()]
    if kind == "relative":
        return today + timedelta(days=1 if g[0].startswith("t") and g[0] not in ("today", "tonight") else 0)
    if kind == "weekday":
        ahead = (_WEEKDAYS[g[0]] - today.weekday()) % 7 or 7
        return today + timedelta(days=ahead)
    if kind == "next_unit":
        if g[0] == "week":
            return today + timedelta(days=7 - today.weekday())
        return (today.replace(day=1) + timedelta(days=32)).replace(day=1)
    if kind == "in":
        count = int(g[0]) if g[0].isdigit() else _COUNTS[g[0]]
        if g[1] == "month":
            return _add_months(today, count)
        return today + timedelta(days=count * _UNIT_DAYS[g[1]])
    if kind == "iso":
        return _valid(int(g[0]), int(g[1]), int(g[2]))
    if kind == "nth":  # this month's, else the next month that has that day
        first = today.replace(day=1)
        for ahead in range(12):
            start = _add_months(first, ahead)
            nth = _valid(start.year, start.month, int(g[0]))
            if nth is not None and nth >= today:
                return nth
        return None
    day, month, year = (g[0], g[1], g[2]) if kind == "day_month" else (g[1], g[0], g[2])
    return _on(int(day), _MONTHS[month], int(year) if year else None, today)


def _on(day: int, month: int, year: int | None, today: date) -> date | None:
    """``day``/``month`` in ``year``, or the next time it comes (today counts)."""
    if year is not None:
        return _valid(year, month, day)
    found = _valid(today.year, month, day)
    return found if found is None or found >= today else _valid(today.year + 1, month, day)


def _valid(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _add_months(day: date, months: int) -> date:
    month = day.month - 1 + months
    year, month = day.year + month // 12, month % 12 + 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _first_day(rule: str, today: date) -> date | None:
    """The first day the rule yields from today (today included)."""
    start = datetime.combine(today, time())
    try:
        found = first_occurrence(parse_rrule(rule, start), start)
    except ValueError:
        return None
    return found.date() if found else None
