"""Recurrence: rules checked in words, and a series' starts in a range exactly those dateutil
gives walking from the first start, however long ago it began (the restart at the last period
before the range, the rule built without parsing it again)."""

from __future__ import annotations

import random
import re
import time
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from dateutil.rrule import rrulestr

from fable_core.daily.calendar.recurrence import _floating, check_rule, last_start, starts

PARIS = ZoneInfo("Europe/Paris")
RULES = [
    "FREQ=DAILY", "FREQ=DAILY;INTERVAL=3", "FREQ=DAILY;BYDAY=MO,FR", "FREQ=WEEKLY",
    "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,FR",
    "FREQ=WEEKLY;INTERVAL=3;WKST=SU;BYDAY=SU,TU", "FREQ=MONTHLY", "FREQ=MONTHLY;INTERVAL=5;BYDAY=-1FR",
    "FREQ=MONTHLY;BYMONTHDAY=31", "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1", "FREQ=MONTHLY;BYDAY=+2TU",
    "FREQ=YEARLY", "FREQ=YEARLY;INTERVAL=2;BYMONTH=3;BYDAY=2SU", "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29",
    "FREQ=YEARLY;BYYEARDAY=100,-1", "FREQ=DAILY;COUNT=50", "FREQ=WEEKLY;UNTIL=20300101T000000Z;BYDAY=TU,TH",
    "FREQ=MONTHLY;INTERVAL=2;COUNT=20;BYMONTHDAY=-1", "FREQ=WEEKLY;UNTIL=20291231",
]


def wall(*parts: int) -> datetime:
    return datetime(*parts)  # noqa: DTZ001 - wall-clock time in the series' zone


@pytest.mark.parametrize("rule", RULES)
def test_starts_in_a_range_are_dateutils_from_the_first_start(rule: str) -> None:
    rng = random.Random(rule)
    assert check_rule(rule) == rule
    for _ in range(80):
        first = wall(2015, 1, 1, 9, 30) + timedelta(days=rng.randrange(3000))
        since = first + timedelta(days=rng.randrange(-30, 5000), hours=rng.randrange(24))
        until = since + timedelta(days=rng.randrange(1, 400))
        walked = [d for d in rrulestr(_floating(rule, PARIS), dtstart=first).between(since, until, inc=True)
                  if since <= d < until]
        assert list(starts(rule, first, PARIS, last_start(rule, first, PARIS), since, until)) == walked, (
            first, since, until)


@pytest.mark.parametrize(("rule", "said"), [
    ("FREQ=HOURLY", "FREQ=DAILY, WEEKLY, MONTHLY or YEARLY"),
    ("FREQ=WEEKLY;BYHOUR=9", "leave BYHOUR out"),
    ("FREQ=MONTHLY;BYMONTH=2;BYMONTHDAY=30", "there is no 30 February"),
    ("FREQ=DAILY;COUNT=0", "COUNT=0"),
    ("FREQ=DAILY;COUNT=3;UNTIL=20270101", "both COUNT and UNTIL"),
    ("tuesdays", "is not NAME=VALUE"),
    ("FREQ=WEEKLY;BYDAY=XX", "invalid 'BYDAY': XX"),
    ("FREQ=DAILY;INTERVAL=0", "INTERVAL must be 1 or more"),
    ("FREQ=DAILY;UNTIL=2026", "UNTIL=2026"),
    ("FREQ=DAILY\nEXDATE:20261201", "not one RRULE"),
    ("FREQ=DAILY;" + "BYMONTH=1;" * 100, "longer than 500"),
])
def test_a_bad_rule_is_refused_in_words(rule: str, said: str) -> None:
    with pytest.raises(ValueError, match=re.escape(said)):
        check_rule(rule)


def test_a_rule_that_ends_before_its_start_is_refused() -> None:
    with pytest.raises(ValueError, match="no occurrence from the event's start"):
        last_start("FREQ=DAILY;UNTIL=20200101", wall(2026, 1, 1, 9), PARIS)


def test_a_count_that_runs_for_centuries_is_refused_quickly() -> None:
    """Its last occurrence is looked for within COUNT_YEARS, not to year 9999 (2 s here)."""
    started = time.perf_counter()
    with pytest.raises(ValueError, match="runs past 2076: give a smaller COUNT or an UNTIL"):
        last_start("FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29;COUNT=1000", wall(2026, 1, 5, 9), PARIS)
    assert time.perf_counter() - started < 0.5
    assert last_start("FREQ=WEEKLY;COUNT=1000", wall(2026, 1, 5, 9), PARIS) == wall(2045, 2, 27, 9)
