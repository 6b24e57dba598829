"""The calendar tools through the dispatcher (the path of every surface): times in and out in the
user's zone, all-day dates that no zone shifts, recurrence in the zone an event was made in,
exceptions and changed occurrences, paging, and bad input that names the value and writes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from fable_core.errors import InvalidInput, NotFound
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

pytestmark = pytest.mark.usefixtures("alice")


async def listed(call: Any, start: str, end: str, **options: Any) -> list[tuple[Any, ...]]:
    page = await call("list_events", start=start, end=end, **options)
    return [(i["event_id"], i["title"], i["start"], i["end"], i.get("occurrence")) for i in page["items"]]


async def test_a_naive_time_is_in_the_users_zone_and_read_back_there(call: Any) -> None:
    made = await call("create_event", title="Dentist", start="2026-12-07T09:30", location="Rue X")
    assert (made["start"], made["end"], made["timezone"]) == (
        "2026-12-07T09:30+01:00", "2026-12-07T10:30+01:00", "Europe/Paris")
    utc = await call("create_event", title="Call", start="2026-12-07T15:00Z", end="2026-12-07T15:30+00:00")
    assert (utc["start"], utc["end"]) == ("2026-12-07T16:00+01:00", "2026-12-07T16:30+01:00")
    assert await listed(call, "2026-12-07", "2026-12-08") == [
        (made["id"], "Dentist", "2026-12-07T09:30+01:00", "2026-12-07T10:30+01:00", None),
        (utc["id"], "Call", "2026-12-07T16:00+01:00", "2026-12-07T16:30+01:00", None)]
    assert (await call("get_event", event_id=made["id"]))["location"] == "Rue X"
    # an offset's "+" that a query string turned into a space is still an offset
    assert len(await listed(call, "2026-12-07T10:00 01:00", "2026-12-07T17:00+01:00")) == 2


async def test_all_day_events_are_dates_that_no_zone_shifts(call: Any, alice: Caller, fable: Fable) -> None:
    made = await call("create_event", title="Holiday", start="2026-12-24", end="2026-12-26")
    assert made["all_day"] is True and (made["start"], made["end"]) == ("2026-12-24", "2026-12-26")
    for zone in ("Pacific/Kiritimati", "Pacific/Pago_Pago"):  # +14 and -11
        await fable.call("set_setting", {"key": "timezone", "value": zone}, alice)
        assert await listed(call, "2026-12-25", "2026-12-26") == [
            (made["id"], "Holiday", "2026-12-24", "2026-12-26", None)]
        assert await listed(call, "2026-12-26", "2026-12-27") == []


async def test_a_series_keeps_its_wall_clock_time_across_dst_in_its_own_zone(call: Any) -> None:
    """9:00 in New York every Monday: Paris sees 15:00, but 14:00 in the weeks between the US
    change (8 March) and the European one (29 March)."""
    made = await call("create_event", title="Sync", start="2026-03-02T09:00", timezone="America/New_York",
                      rrule="FREQ=WEEKLY")
    starts = [s for _, _, s, _, _ in await listed(call, "2026-03-01", "2026-04-07")]
    assert starts == ["2026-03-02T15:00+01:00", "2026-03-09T14:00+01:00", "2026-03-16T14:00+01:00",
                      "2026-03-23T14:00+01:00", "2026-03-30T15:00+02:00", "2026-04-06T15:00+02:00"]
    assert (await call("get_event", event_id=made["id"]))["rrule"] == "FREQ=WEEKLY"


async def test_one_occurrence_is_deleted_or_changed_alone(call: Any) -> None:
    made = await call("create_event", title="Standup", start="2026-12-07T09:00", end="2026-12-07T09:15",
                      rrule="FREQ=DAILY;COUNT=5")
    gone = await call("delete_event", event_id=made["id"], occurrence="2026-12-08T09:00+01:00")
    assert gone == {"id": made["id"], "occurrence": "2026-12-08T09:00+01:00", "deleted": True}
    moved = await call("update_event", event_id=made["id"], occurrence="2026-12-09T09:00", all_day=False,
                       start="2026-12-13T10:00", end="2026-12-13T10:30", title="Standup (moved)",
                       rrule="FREQ=DAILY;COUNT=5")  # as the series is: what a form sends is no change of it
    assert (moved["occurrence"], moved["start"], moved["title"]) == (
        "2026-12-09T09:00+01:00", "2026-12-13T10:00+01:00", "Standup (moved)")
    week = await listed(call, "2026-12-07", "2026-12-14")
    assert week == [
        (made["id"], "Standup", "2026-12-07T09:00+01:00", "2026-12-07T09:15+01:00", "2026-12-07T09:00+01:00"),
        (made["id"], "Standup", "2026-12-10T09:00+01:00", "2026-12-10T09:15+01:00", "2026-12-10T09:00+01:00"),
        (made["id"], "Standup", "2026-12-11T09:00+01:00", "2026-12-11T09:15+01:00", "2026-12-11T09:00+01:00"),
        (made["id"], "Standup (moved)", "2026-12-13T10:00+01:00", "2026-12-13T10:30+01:00",
         "2026-12-09T09:00+01:00")]
    # moved out of a range, the occurrence still hides its original
    assert len(await listed(call, "2026-12-09", "2026-12-10")) == 0
    series = await call("get_event", event_id=made["id"])
    assert series["exdates"] == ["2026-12-08T09:00+01:00"] and series["changed"] == ["2026-12-09T09:00+01:00"]
    with pytest.raises(NotFound, match="no occurrence starting"):
        await call("delete_event", event_id=made["id"], occurrence="2026-12-08T09:00+01:00")  # already gone


async def test_changing_the_series_time_drops_its_exceptions(call: Any) -> None:
    made = await call("create_event", title="Gym", start="2026-12-07T18:00", rrule="FREQ=WEEKLY")
    await call("delete_event", event_id=made["id"], occurrence="2026-12-14T18:00")
    await call("update_event", event_id=made["id"], occurrence="2026-12-21T18:00", title="Gym (late)")
    renamed = await call("update_event", event_id=made["id"], title="Gym!")  # not its time: they stay
    assert renamed["exdates"] and renamed["changed"]
    moved = await call("update_event", event_id=made["id"], start="2026-12-07T19:00")
    assert (moved["end"], moved.get("exdates"), moved.get("changed")) == ("2026-12-07T20:00+01:00", None, None)


async def test_a_long_range_pages_through_every_occurrence_once(call: Any) -> None:
    daily = await call("create_event", title="Pills", start="2026-01-01T08:00", rrule="FREQ=DAILY")
    await call("create_event", title="Trip", start="2026-06-10", end="2026-06-20")
    seen: list[tuple[Any, ...]] = []
    cursor = None
    while True:
        page = await call("list_events", start="2026-06-01", end="2026-07-01", limit=7,
                          **({"cursor": cursor} if cursor else {}))
        seen += [(i["event_id"], i["start"]) for i in page["items"]]
        cursor = page.get("next_cursor")
        if cursor is None:
            break
    assert len(seen) == 31 == len(set(seen))
    assert seen[0] == (daily["id"], "2026-06-01T08:00+02:00") and ("2026-06-10" in [s for _, s in seen])


async def test_events_are_their_owners_alone(call: Any, bob: Caller) -> None:
    made = await call("create_event", title="Mine", start="2026-12-07T09:00")
    for name, args in (("get_event", {}), ("update_event", {"title": "x"}), ("delete_event", {})):
        with pytest.raises(NotFound, match=f"event {made['id']} not found"):
            await call(name, as_=bob, event_id=made["id"], **args)
    assert (await call("list_events", as_=bob, start="2026-12-07", end="2026-12-08"))["items"] == []


async def test_an_unreadable_note_or_project_is_not_found_like_a_missing_one(call: Any, bob: Caller) -> None:
    note = await call("create_note", title="Agenda")
    project = await call("create_project", title="House")
    linked = await call("create_event", title="Meet", start="2026-12-07T09:00", note_id=note["id"],
                        project_id=project["id"])
    assert (linked["note_id"], linked["project_id"]) == (note["id"], project["id"])
    with pytest.raises(NotFound, match=f"note {note['id']} not found"):
        await call("create_event", as_=bob, title="Meet", start="2026-12-07T09:00", note_id=note["id"])
    with pytest.raises(NotFound, match=f"project {project['id']} not found"):
        await call("create_event", as_=bob, title="Meet", start="2026-12-07T09:00", project_id=project["id"])


BAD = [
    ({"start": "2026-12-07T10:00", "end": "2026-12-07T09:00"}, "end '2026-12-07T09:00:00+01:00' is before start"),
    ({"start": "2026-12-07T10:00", "rrule": "FREQ=FORTNIGHTLY"}, "FREQ=DAILY, WEEKLY"),
    ({"start": "2026-12-07T10:00", "rrule": "FREQ=MONTHLY;BYMONTH=2;BYMONTHDAY=30"}, "30 February"),
    ({"start": "2026-12-07T10:00", "rrule": "FREQ=DAILY;UNTIL=20261201"}, "no occurrence from the event's start"),
    ({"start": "2026-12-07T10:00", "timezone": "Europe/Pariss"}, "'Europe/Pariss' is not a known time zone"),
    ({"start": "2026-12-07T10:00", "color": "blueish"}, "color 'blueish' is not a colour"),
    ({"start": "2026-12-07", "all_day": False}, "start '2026-12-07' is a date, but the event is timed"),
    ({"start": "2026-12-07T10:00", "all_day": True}, "has a time, but the event is all-day"),
    ({"start": "7 December"}, "start '7 December' is not an ISO 8601"),
    ({"start": "2026-12-07", "end": "2026-12-07"}, "must be after start '2026-12-07'"),
    ({"start": "9999-12-07T10:00"}, "outside the years"),
]


@pytest.mark.parametrize(("arguments", "said"), BAD, ids=[said.split()[0] + str(i) for i, (_, said) in enumerate(BAD)])
async def test_bad_input_is_refused_naming_the_value_and_nothing_is_written(call: Any, arguments: dict[str, Any],
                                                                             said: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        await call("create_event", title="Bad", **arguments)
    assert said in refused.value.message
    assert (await call("list_events", start="2026-11-01", end="2026-12-31"))["items"] == []


async def test_bad_changes_are_refused_and_change_nothing(call: Any) -> None:
    timed = await call("create_event", title="Timed", start="2026-12-07T10:00", rrule="FREQ=DAILY")
    refusals = [
        ({"start": "2026-12-08"}, "is a date, but the event is timed"),
        ({"end": "2026-12-07T09:00"}, "is before start"),
        ({"all_day": True}, "changing all_day needs a start"),
        ({"occurrence": "2026-12-08T10:00", "rrule": "FREQ=WEEKLY"}, "rrule belongs to the whole series"),
        ({"occurrence": "2026-12-08T10:00", "all_day": True, "start": "2026-12-08"},
         "all_day belongs to the whole series"),
        ({"occurrence": "2026-12-08"}, "is a date, but event"),
        ({"occurrence": "2026-12-08T10:30"}, "has no occurrence starting"),
        ({"color": "#12345"}, "'#12345' is not a colour"),
    ]
    for arguments, said in refusals:
        with pytest.raises((InvalidInput, NotFound)) as refused:
            await call("update_event", event_id=timed["id"], **arguments)
        assert said in refused.value.message, arguments
    assert await call("get_event", event_id=timed["id"]) == timed
    with pytest.raises(InvalidInput, match="at most 366 days"):
        await call("list_events", start="2026-01-01", end="2027-06-01")
    with pytest.raises(InvalidInput, match="must be after start"):
        await call("list_events", start="2026-01-02", end="2026-01-01")
