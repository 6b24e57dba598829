"""The calendar's section of the morning note: the day's occurrences in the user's zone, all-day
ones first, registered through the calendar's own capability modules."""

from __future__ import annotations

from datetime import date, datetime, time
from typing import Any
from zoneinfo import ZoneInfo

from fable_core.capabilities import load_capabilities
from fable_core.daily.journal.sections import SECTIONS, PrepDay
from fable_core.people.preferences.journal import JournalPrefs
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

PARIS = ZoneInfo("Europe/Paris")


def day_of(caller: Caller, day: date) -> PrepDay:
    return PrepDay(caller.user_id, day, PARIS, datetime.combine(day, time(), PARIS),
                   datetime.combine(date.fromordinal(day.toordinal() + 1), time(), PARIS), JournalPrefs())


async def test_the_days_events_are_the_morning_notes_events_section(fable: Fable, call: Any, alice: Caller,
                                                                    bob: Caller) -> None:
    load_capabilities()
    section = SECTIONS["events"]
    assert section.order == 20
    await call("create_event", title="Standup", start="2026-12-01T09:00", rrule="FREQ=WEEKLY;BYDAY=MO,TU",
               location="Room 4")
    await call("create_event", title="Holiday", start="2026-12-07")
    await call("create_event", title="Night train", start="2026-12-06T22:30", end="2026-12-07T07:10")
    await call("create_event", title="Dentist", start="2026-12-07T16:00")
    await call("create_event", title="Not mine", start="2026-12-07T10:00", as_=bob)
    async with fable.db.reading() as session:
        entries = await section.gather(session, alice, day_of(alice, date(2026, 12, 7)))
        empty = await section.gather(session, alice, day_of(alice, date(2026, 12, 9)))
    assert entries == [
        {"title": "Holiday", "all_day": True},
        {"title": "Night train", "time": "since Sun 22:30"},
        {"title": "Standup", "time": "09:00", "location": "Room 4"},
        {"title": "Dentist", "time": "16:00"},
    ]
    assert empty is None
    assert section.render(entries).splitlines() == [
        "- All day: Holiday", "- since Sun 22:30: Night train", "- 09:00: Standup (Room 4)", "- 16:00: Dentist"]
