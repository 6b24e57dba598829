"""Recurrence rules: what the validator refuses, and how far the next occurrence is looked for.

dateutil walks a rule that never matches period by period up to year 9999 (0.3-19 s measured,
whatever UNTIL says), so rules are refused when they match nothing within the horizon and
``next_occurrence`` looks no further than it. The tests state behaviour; timings are not tested.
"""

from __future__ import annotations

from datetime import date

import pytest

from fable_core.errors import InvalidInput
from fable_core.knowledge.recurrence import next_occurrence


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", "never occurs (there is no 30 February)"),
        ("FREQ=MONTHLY;BYMONTHDAY=31;BYMONTH=4", "never occurs (there is no 31 April)"),
        ("FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30", "never occurs (there is no 30 February)"),
        ("FREQ=WEEKLY;BYDAY=MO;BYMONTHDAY=31;BYMONTH=2", "never occurs (there is no 31 February)"),
        ("FREQ=DAILY;BYMONTHDAY=31;BYMONTH=11", "never occurs (there is no 31 November)"),
        ("FREQ=MONTHLY;BYMONTHDAY=30,31;BYMONTH=2", "there is no 30 or 31 February"),
        ("FREQ=YEARLY;BYMONTHDAY=31;BYMONTH=2,4,6", "there is no 31 February or 31 April or 31 June"),
        ("FREQ=YEARLY;BYMONTHDAY=-30;BYMONTH=2", "there is no day -30 of February"),
        ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30;UNTIL=20300101T000000Z", "there is no 30 February"),
        ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30;COUNT=3", "there is no 30 February"),
        ("FREQ=YEARLY;BYYEARDAY=366;BYMONTH=1", "never occurs within 10 years"),
        ("FREQ=YEARLY;BYWEEKNO=53;BYMONTH=6", "never occurs within 10 years"),
        ("FREQ=MONTHLY;BYDAY=6MO", "never occurs within 10 years"),
        ("FREQ=DAILY;BYSETPOS=2", "never occurs within 10 years"),
        ("FREQ=WEEKLY;BYSETPOS=8", "never occurs within 10 years"),
        ("FREQ=DAILY;BYEASTER=0;BYMONTH=1", "never occurs within 10 years"),
        ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO", "never occurs within 10 years"),
        ("FREQ=DAILY;INTERVAL=1;BYSETPOS=400", "bysetpos must be between 1 and 366"),
        ("FREQ=MONTHLY;INTERVAL=0", "INTERVAL must be 1 or more"),
        ("FREQ=DAILY;INTERVAL=-1", "INTERVAL must be 1 or more"),
        ("FREQ=DAILY\nEXRULE:FREQ=DAILY", "one RRULE"),
        ("FREQ=WEEKLY;BYDAY=MO;BYHOUR=9", "tasks recur by date"),
        ("DTSTART:20000101\nRRULE:FREQ=DAILY", "one RRULE"),
    ],
)
async def test_a_rule_that_cannot_recur_is_refused_and_nothing_is_written(
    call, fails, snapshot, rule, problem
) -> None:
    before = await snapshot()
    err = await fails(call("create_note", title="Never", due_date="2026-01-01", recurrence_rule=rule),
                      InvalidInput)
    assert problem in err.message
    assert await snapshot() == before


async def test_update_note_refuses_a_rule_that_never_occurs(call, fails, snapshot) -> None:
    task = await call("create_note", title="Pay rent", due_date="2026-01-01", recurrence_rule="FREQ=MONTHLY")
    before = await snapshot()
    err = await fails(call("update_note", note_id=task["id"], recurrence_rule="FREQ=YEARLY;BYMONTH=4;BYMONTHDAY=31"),
                      InvalidInput)
    assert "there is no 31 April" in err.message
    assert await snapshot() == before


async def test_a_rule_is_stored_without_prefix_in_upper_case(call) -> None:
    task = await call("create_note", title="Standup", due_date="2026-01-05",
                      recurrence_rule=" rrule:freq=weekly;byday=mo;until=20261231T000000Z ")
    assert task["recurrence_rule"] == "FREQ=WEEKLY;BYDAY=MO;UNTIL=20261231T000000"


async def _dues(call, rule: str, due: str, times: int) -> list[str]:
    """The due dates of a series created on ``due`` and completed up to ``times`` times."""
    task = await call("create_note", title="Series", due_date=due, recurrence_rule=rule)
    dues = [task["due_date"]]
    for _ in range(times):
        task = (await call("complete_task", note_id=task["id"]))["next_occurrence"]
        if task is None:
            break
        dues.append(task["due_date"])
    return dues


@pytest.mark.parametrize(
    ("rule", "due", "expected"),
    [
        ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29", "2028-02-29", ["2028-02-29", "2032-02-29", "2036-02-29"]),
        ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29", "2096-02-29", ["2096-02-29", "2104-02-29"]),  # 2100 is not leap
        ("FREQ=MONTHLY;BYMONTHDAY=31", "2026-01-31",
         ["2026-01-31", "2026-03-31", "2026-05-31", "2026-07-31", "2026-08-31"]),
        ("FREQ=YEARLY;INTERVAL=20", "2026-05-01", ["2026-05-01", "2046-05-01", "2066-05-01"]),
    ],
)
async def test_valid_rules_recur_as_before(call, rule, due, expected) -> None:
    assert await _dues(call, rule, due, times=len(expected) - 1) == expected


@pytest.mark.parametrize(
    ("rule", "due", "expected"),
    [
        ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;COUNT=2", "2028-02-29", ["2028-02-29", "2032-02-29"]),
        ("FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,FR;COUNT=3", "2026-01-06", ["2026-01-06", "2026-01-09", "2026-01-20"]),
        ("FREQ=MONTHLY;BYDAY=-1FR;UNTIL=20260401", "2026-01-30", ["2026-01-30", "2026-02-27", "2026-03-27"]),
    ],
)
async def test_count_and_until_still_end_a_series(call, rule, due, expected) -> None:
    assert await _dues(call, rule, due, times=len(expected)) == expected


async def test_a_rule_that_never_matches_from_its_due_date_ends_the_series(call) -> None:
    # Mondays, every 7 days, counted from a Tuesday: only Tuesdays are ever visited.
    assert await _dues(call, "FREQ=DAILY;INTERVAL=7;BYDAY=MO", "2026-01-06", times=1) == ["2026-01-06"]


@pytest.mark.parametrize(
    ("rule", "due", "expected"),
    [
        ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO", date(2016, 2, 29), None),  # next: 2044
        ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", date(2026, 1, 1), None),
        ("FREQ=DAILY;BYSETPOS=2", date(2026, 1, 1), None),
        ("FREQ=YEARLY;BYMONTH=2", date(2026, 1, 30), None),  # the 30th, taken from the due date
        ("FREQ=YEARLY;INTERVAL=100;BYMONTH=2;BYMONTHDAY=29", date(2000, 2, 29), None),  # next: 2400
        ("FREQ=YEARLY;INTERVAL=100", date(2000, 2, 1), date(2100, 2, 1)),
        ("FREQ=DAILY;INTERVAL=3650", date(2026, 1, 1), date(2035, 12, 30)),
    ],
)
def test_next_occurrence_looks_no_further_than_the_horizon(rule, due, expected) -> None:
    assert next_occurrence(rule, due) == expected


@pytest.mark.parametrize(
    "rule",
    ["FREQ=MONTHLY;INTERVAL=0", "FREQ=DAILY;INTERVAL=-1", "FREQ=DAILY\nEXRULE:FREQ=DAILY"],
)
def test_a_stored_rule_the_validator_now_refuses_does_not_recur(rule) -> None:
    assert next_occurrence(rule, date(2026, 1, 1)) is None


def test_next_occurrence_is_a_later_day_even_when_the_rule_names_an_hour() -> None:
    assert next_occurrence("FREQ=DAILY;BYHOUR=9", date(2026, 1, 1)) == date(2026, 1, 2)
