"""Recurrence in words: phrases stored as the RRULE they mean, and refusals that say, in plain
words, what is wrong and which rule to send instead (through the dispatcher, as every surface)."""

from __future__ import annotations

import pytest

from fable_core.errors import InvalidInput


@pytest.mark.parametrize(
    ("words", "rule"),
    [
        ("daily", "FREQ=DAILY"),
        ("Every weekday", "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR"),
        ("every weekend", "FREQ=WEEKLY;BYDAY=SA,SU"),
        ("weekly", "FREQ=WEEKLY"),
        ("monthly", "FREQ=MONTHLY"),
        ("annually", "FREQ=YEARLY"),
        ("every 2 weeks", "FREQ=WEEKLY;INTERVAL=2"),
        ("every other week", "FREQ=WEEKLY;INTERVAL=2"),
        ("fortnightly", "FREQ=WEEKLY;INTERVAL=2"),
        ("every 3 months", "FREQ=MONTHLY;INTERVAL=3"),
        ("every monday and thursday", "FREQ=WEEKLY;BYDAY=MO,TH"),
        ("every fri, mon & wed.", "FREQ=WEEKLY;BYDAY=MO,WE,FR"),
        ("every other friday", "FREQ=WEEKLY;INTERVAL=2;BYDAY=FR"),
        ("monthly on the 15th", "FREQ=MONTHLY;BYMONTHDAY=15"),
        ("every month on the last day", "FREQ=MONTHLY;BYMONTHDAY=-1"),
    ],
)
async def test_plain_words_are_stored_as_the_rule_they_mean(call, words, rule) -> None:
    task = await call("create_note", title="Series", due_date="2026-01-05", recurrence_rule=words)
    assert task["recurrence_rule"] == rule


async def test_every_weekday_skips_the_weekend_when_completed(call) -> None:
    friday = "2026-01-09"
    task = await call("create_note", title="Standup", due_date=friday, recurrence_rule="every weekday")
    following = (await call("complete_task", note_id=task["id"]))["next_occurrence"]
    assert following["due_date"] == "2026-01-12"   # Monday
    updated = await call("update_note", note_id=following["id"], recurrence_rule="every 2 weeks")
    assert updated["recurrence_rule"] == "FREQ=WEEKLY;INTERVAL=2"


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("biweekly", "'biweekly' is ambiguous: every two weeks is 'every 2 weeks' (FREQ=WEEKLY;INTERVAL=2); "
                     "twice a week is e.g. 'every monday and thursday' (FREQ=WEEKLY;BYDAY=MO,TH)"),
        ("twice a week", "name the days, e.g. 'every monday and thursday' (FREQ=WEEKLY;BYDAY=MO,TH)"),
        ("every weekday at 9am", "tasks recur by date, not time of day: leave out 'at 9am': "
                                 "use 'every weekday' (FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR)"),
        ("every tuesday and sometimes friday", "give an RFC 5545 RRULE such as 'FREQ=WEEKLY;BYDAY=TU,FR'"),
        ("when it rains", "'when it rains' is not a recurrence rule: give an RFC 5545 RRULE such as "
                          "'FREQ=WEEKLY;BYDAY=MO', or words such as 'daily', 'weekly', 'every weekday'"),
        ("every 0 days", "is not a recurrence rule: give an RFC 5545 RRULE such as 'FREQ=DAILY'"),
        ("FREQ=WEEKLY;BYDAY=MO;BYHOUR=9", "tasks recur by date, not time of day: leave out BYHOUR "
                                          "(use 'FREQ=WEEKLY;BYDAY=MO')"),
        ("FREQ=HOURLY", "tasks recur at most daily: FREQ=HOURLY is not possible"),
        ("FREQ=BIWEEKLY", "FREQ is DAILY, WEEKLY, MONTHLY or YEARLY, not 'BIWEEKLY': e.g. 'FREQ=WEEKLY;INTERVAL=2'"),
        ("BYDAY=MO,TH", "a rule needs FREQ=DAILY, WEEKLY, MONTHLY or YEARLY, e.g. 'FREQ=WEEKLY;BYDAY=MO,TH'"),
        ("FREQUENCY=WEEKLY", "'FREQUENCY' is not part of an RRULE (did you mean `FREQ`?)"),
        ("FREQ=WEEKLY;BYDAY=MONDAY,FRIDAY", "BYDAY takes the days MO, TU, WE, TH, FR, SA, SU (1MO: the first "
                                            "Monday), not 'MONDAY': e.g. 'FREQ=WEEKLY;BYDAY=MO,FR'"),
        ("FREQ=WEEKLY;INTERVAL=two", "INTERVAL takes a whole number, not 'TWO': e.g. 'FREQ=WEEKLY;INTERVAL=2'"),
        ("FREQ=WEEKLY;UNTIL=2027-12-31", "UNTIL takes a date as YYYYMMDD, not '2027-12-31'"),
        ("FREQ=WEEKLY;MO", "'MO' is not NAME=VALUE: write a rule as parts joined by ';'"),
    ],
)
async def test_what_cannot_be_a_rule_is_refused_in_words_with_the_rule_to_use(
    call, fails, snapshot, given, said
) -> None:
    task = await call("create_note", title="Series", due_date="2026-01-05", recurrence_rule="weekly")
    before = await snapshot()
    for attempt in (call("create_note", title="Other", due_date="2026-01-05", recurrence_rule=given),
                    call("update_note", note_id=task["id"], recurrence_rule=given)):
        err = await fails(attempt, InvalidInput)
        assert said in err.message
    assert await snapshot() == before
