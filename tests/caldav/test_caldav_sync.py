"""Two-way sync against a real Radicale: round trips (recurrence, all-day, zones), two users
apart, edits and deletions made on the server with the caldav client, local edits and
deletions arriving there, the conflict rule, no duplicates, a server down and a password
changed."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import icalendar
import pytest
from sqlalchemy import func, select
from support.caldav_server import Radicale

from fable_core.daily.caldav import local
from fable_core.daily.caldav.sync import sync_account
from fable_core.daily.calendar.service import EventFields, create_event, delete_event, update_event
from fable_core.db.models import CaldavAccount, CalendarEvent, EventTombstone
from fable_core.errors import InvalidInput, Unavailable
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

BERLIN = ZoneInfo("Europe/Berlin")


def wall(*parts: int) -> datetime:
    return datetime(*parts)  # noqa: DTZ001  wall-clock time in the event's zone


async def connect(fable: Fable, caller: Caller, radicale: Radicale, user: str) -> None:
    await fable.call("connect_caldav", {"url": radicale.url, "username": user, "password": radicale.users[user]},
                     caller)


async def make(fable: Fable, caller: Caller, **fields: Any) -> CalendarEvent:
    async with fable.db.transaction() as session:
        return await create_event(session, caller, EventFields(**fields))


async def change(fable: Fable, caller: Caller, event_id: int, **fields: Any) -> None:
    async with fable.db.transaction() as session:
        await update_event(session, caller, event_id, EventFields(**fields))


async def events(fable: Fable, caller: Caller) -> dict[str, CalendarEvent]:
    async with fable.db.reading() as session:
        rows = (await session.execute(select(CalendarEvent).where(
            CalendarEvent.user_id == caller.user_id, CalendarEvent.series_id.is_(None)))).scalars()
        return {r.uid: r for r in rows}


def on_server(radicale: Radicale, user: str) -> dict[str, Any]:
    """UID -> the VEVENT of each object in ``user``'s calendar, as the server has it."""
    found = {}
    for obj in radicale.calendar(user).events():
        event = icalendar.Calendar.from_ical(obj.data).walk("VEVENT")[0]
        found[str(event["uid"])] = event
    return found


def edit_on_server(radicale: Radicale, user: str, uid: str, modified: datetime | None = None, **props: Any) -> None:
    obj = radicale.calendar(user).get_event_by_uid(uid)
    cal = icalendar.Calendar.from_ical(obj.data)
    event = cal.walk("VEVENT")[0]
    for name, value in props.items():
        event.pop(name, None)
        event.add(name, value)
    event.pop("last-modified", None)
    event.add("last-modified", modified or datetime.now(UTC))
    obj.data = cal.to_ical().decode()
    obj.save()


async def sync(fable: Fable, caller: Caller) -> dict[str, Any]:
    return await fable.call("sync_calendar", {}, caller)


async def test_a_round_trip_keeps_recurrence_exceptions_zones_and_all_day_events(
        sync_fable: Fable, radicale: Radicale, alice: Caller) -> None:
    await make(sync_fable, alice, title="Standup", start=wall(2026, 3, 2, 9), end=wall(2026, 3, 2, 9, 15),
               timezone="Europe/Berlin", rrule="FREQ=WEEKLY;BYDAY=MO", exdates=[wall(2026, 3, 9, 9)],
               location="Room 4", color="#3366cc", description="daily-ish")
    await make(sync_fable, alice, title="Holidays", start=date(2026, 8, 1), end=date(2026, 8, 15))
    before = {uid: local.fields_of(e) for uid, e in (await events(sync_fable, alice)).items()}
    await connect(sync_fable, alice, radicale, "ana")

    result = await sync(sync_fable, alice)
    assert (result["pushed"], result["pulled"], result["deleted"]) == (2, 0, 0)
    assert result["status"]["last_success_at"] and "last_error" not in result["status"]
    server = on_server(radicale, "ana")
    standup = next(e for e in server.values() if e["summary"] == "Standup")
    assert standup["dtstart"].params["TZID"] == "Europe/Berlin" and standup.decoded("dtstart").hour == 9
    assert standup["rrule"].to_ical() == b"FREQ=WEEKLY;BYDAY=MO"
    assert [d.dt.day for d in standup["exdate"].dts] == [9]
    holidays = next(e for e in server.values() if e["summary"] == "Holidays")
    assert holidays.decoded("dtstart") == date(2026, 8, 1) and holidays.decoded("dtend") == date(2026, 8, 15)

    # everything deleted here and the account connected again: the server's copies come back as they were
    await sync_fable.call("disconnect_caldav", {}, alice)
    async with sync_fable.db.transaction() as session:
        for event in (await events(sync_fable, alice)).values():
            await delete_event(session, alice, event.id)
        assert not await session.scalar(select(func.count()).select_from(EventTombstone))  # links forgotten
    await connect(sync_fable, alice, radicale, "ana")
    result = await sync(sync_fable, alice)
    assert (result["pulled"], result["pushed"]) == (2, 0)
    after = {uid: local.fields_of(e) for uid, e in (await events(sync_fable, alice)).items()}
    assert set(after) == set(before)
    for uid, fields in before.items():
        assert fields.title == after[uid].title and fields.start == after[uid].start and fields.end == after[uid].end
        assert (fields.rrule, fields.exdates, fields.timezone, fields.all_day, fields.color, fields.location) == (
            after[uid].rrule, after[uid].exdates, after[uid].timezone, after[uid].all_day, after[uid].color,
            after[uid].location)


async def test_repeated_syncs_and_reconnecting_never_duplicate_events(
        sync_fable: Fable, radicale: Radicale, alice: Caller) -> None:
    await make(sync_fable, alice, title="Mine", start=wall(2026, 5, 1, 10))
    radicale.calendar("ana").save_event(uid="theirs-1", summary="Theirs", dtstart=datetime(2026, 5, 2, 10, tzinfo=UTC),
                                        dtend=datetime(2026, 5, 2, 11, tzinfo=UTC))
    await connect(sync_fable, alice, radicale, "ana")
    first = await sync(sync_fable, alice)
    assert (first["pulled"], first["pushed"]) == (1, 1)
    for _ in range(3):
        again = await sync(sync_fable, alice)
        assert (again["pulled"], again["pushed"], again["deleted"]) == (0, 0, 0)
    await sync_fable.call("disconnect_caldav", {}, alice)  # links forgotten: matched again by UID
    await connect(sync_fable, alice, radicale, "ana")
    await sync(sync_fable, alice)
    async with sync_fable.db.transaction() as session:  # a sync token the server never gave: listed in full
        await session.execute(CaldavAccount.__table__.update().values(sync_token="http://radicale.org/ns/sync/0"))
    await sync(sync_fable, alice)
    assert sorted(e.title for e in (await events(sync_fable, alice)).values()) == ["Mine", "Theirs"]
    assert sorted(str(e["summary"]) for e in on_server(radicale, "ana").values()) == ["Mine", "Theirs"]


async def test_two_users_on_two_calendars_stay_apart(
        sync_fable: Fable, radicale: Radicale, alice: Caller, bob: Caller) -> None:
    await make(sync_fable, alice, title="Alice's", start=date(2026, 6, 1))
    await make(sync_fable, bob, title="Bob's", start=date(2026, 6, 1))
    radicale.calendar("ben").save_event(uid="ben-1", summary="Ben's own", dtstart=date(2026, 6, 2),
                                        dtend=date(2026, 6, 3))
    await connect(sync_fable, alice, radicale, "ana")
    await connect(sync_fable, bob, radicale, "ben")
    await sync(sync_fable, alice)
    await sync(sync_fable, bob)
    assert [str(e["summary"]) for e in on_server(radicale, "ana").values()] == ["Alice's"]
    assert sorted(str(e["summary"]) for e in on_server(radicale, "ben").values()) == ["Ben's own", "Bob's"]
    assert [e.title for e in (await events(sync_fable, alice)).values()] == ["Alice's"]
    assert sorted(e.title for e in (await events(sync_fable, bob)).values()) == ["Ben's own", "Bob's"]


async def test_an_edit_and_a_delete_made_on_the_server_arrive(
        sync_fable: Fable, radicale: Radicale, alice: Caller) -> None:
    await connect(sync_fable, alice, radicale, "ana")
    radicale.calendar("ana").save_event(uid="srv-1", summary="Lunch", dtstart=datetime(2026, 7, 1, 12, tzinfo=UTC),
                                        dtend=datetime(2026, 7, 1, 13, tzinfo=UTC), rrule={"FREQ": "DAILY", "COUNT": 3})
    radicale.calendar("ana").save_event(uid="srv-2", summary="Gone soon", dtstart=date(2026, 7, 2),
                                        dtend=date(2026, 7, 3))
    assert (await sync(sync_fable, alice))["pulled"] == 2
    lunch = (await events(sync_fable, alice))["srv-1"]
    assert lunch.rrule == "FREQ=DAILY;COUNT=3" and lunch.timezone == "UTC" and lunch.caldav_etag

    edit_on_server(radicale, "ana", "srv-1", summary="Long lunch", dtend=datetime(2026, 7, 1, 14, tzinfo=UTC))
    radicale.calendar("ana").get_event_by_uid("srv-2").delete()
    result = await sync(sync_fable, alice)
    assert (result["pulled"], result["deleted"], result["pushed"]) == (1, 1, 0)
    now = await events(sync_fable, alice)
    assert set(now) == {"srv-1"} and now["srv-1"].title == "Long lunch"
    assert now["srv-1"].end_at == datetime(2026, 7, 1, 14, tzinfo=UTC)
    async with sync_fable.db.reading() as session:  # the server deleted it: nothing to delete there again
        assert not await session.scalar(select(func.count()).select_from(EventTombstone))


async def test_a_local_edit_and_a_local_delete_arrive_on_the_server(
        sync_fable: Fable, radicale: Radicale, alice: Caller) -> None:
    keep = await make(sync_fable, alice, title="Review", start=wall(2026, 9, 1, 15))
    drop = await make(sync_fable, alice, title="Cancelled", start=wall(2026, 9, 2, 15))
    await connect(sync_fable, alice, radicale, "ana")
    await sync(sync_fable, alice)
    await change(sync_fable, alice, keep.id, title="Design review", location="Library")
    async with sync_fable.db.transaction() as session:
        await delete_event(session, alice, drop.id)
    result = await sync(sync_fable, alice)
    assert (result["pushed"], result["deleted"], result["pulled"]) == (1, 1, 0)
    server = on_server(radicale, "ana")
    assert list(server) == [keep.uid]
    assert (str(server[keep.uid]["summary"]), str(server[keep.uid]["location"])) == ("Design review", "Library")
    async with sync_fable.db.reading() as session:
        assert not await session.scalar(select(func.count()).select_from(EventTombstone))
    assert (await sync(sync_fable, alice))["pushed"] == 0


async def test_a_both_sides_edit_goes_to_the_later_and_keeps_the_other_as_a_version(
        sync_fable: Fable, radicale: Radicale, alice: Caller) -> None:
    one = await make(sync_fable, alice, title="Plan A", start=wall(2026, 10, 1, 9))
    two = await make(sync_fable, alice, title="Plan X", start=wall(2026, 10, 2, 9))
    await connect(sync_fable, alice, radicale, "ana")
    await sync(sync_fable, alice)
    # one: edited here, then later on the server -> the server's wins
    await change(sync_fable, alice, one.id, title="Plan B (here)")
    edit_on_server(radicale, "ana", one.uid, datetime.now(UTC) + timedelta(minutes=5), summary="Plan C (server)")
    # two: edited on the server at an earlier time than here -> ours wins and is pushed over theirs
    edit_on_server(radicale, "ana", two.uid, datetime.now(UTC) - timedelta(minutes=5), summary="Plan Y (server)")
    await change(sync_fable, alice, two.id, title="Plan Z (here)")

    result = await sync(sync_fable, alice)
    assert result["conflicts"] == 2
    now = await events(sync_fable, alice)
    assert (now[one.uid].title, now[two.uid].title) == ("Plan C (server)", "Plan Z (here)")
    server = on_server(radicale, "ana")
    assert (str(server[one.uid]["summary"]), str(server[two.uid]["summary"])) == ("Plan C (server)", "Plan Z (here)")
    versions = await sync_fable.call("list_event_versions", {}, alice)
    assert {(v["uid"], v["side"], v["title"]) for v in versions["items"]} == {
        (one.uid, "local", "Plan B (here)"), (two.uid, "server", "Plan Y (server)")}
    full = await sync_fable.call("list_event_versions", {"uid": two.uid, "with_ical": True}, alice)
    assert "SUMMARY:Plan Y (server)" in full["items"][0]["ical"]
    quiet = await sync(sync_fable, alice)
    assert (quiet["pulled"], quiet["pushed"], quiet.get("conflicts", 0)) == (0, 0, 0)


async def test_a_server_that_is_down_fails_clearly_backs_off_and_catches_up_when_back(
        sync_fable: Fable, radicale: Radicale, alice: Caller) -> None:
    await connect(sync_fable, alice, radicale, "ana")
    await sync(sync_fable, alice)
    event = await make(sync_fable, alice, title="While down", start=date(2026, 11, 1))
    with radicale.down():
        with pytest.raises(Unavailable, match="cannot reach the CalDAV server"):
            await sync(sync_fable, alice)
        status = await sync_fable.call("get_caldav_status", {}, alice)
        assert "cannot reach" in status["last_error"] and status["failures"] == 1
        wait = datetime.fromisoformat(status["next_attempt_at"]) - datetime.now(UTC)
        assert timedelta(seconds=30) < wait <= timedelta(minutes=1)
        with pytest.raises(Unavailable):
            await sync(sync_fable, alice)
        status = await sync_fable.call("get_caldav_status", {}, alice)
        assert status["failures"] == 2 and datetime.fromisoformat(status["next_attempt_at"]) - datetime.now(
            UTC) > timedelta(seconds=90)
        assert (await events(sync_fable, alice))[event.uid].caldav_href is None  # nothing half-written
    result = await sync(sync_fable, alice)
    assert result["pushed"] == 1 and "last_error" not in result["status"] and "failures" not in result["status"]
    assert list(on_server(radicale, "ana")) == [event.uid]


async def test_a_changed_password_fails_clearly_and_changes_nothing(
        sync_fable: Fable, radicale: Radicale, alice: Caller) -> None:
    await connect(sync_fable, alice, radicale, "ana")
    await make(sync_fable, alice, title="Kept here", start=date(2026, 12, 1))
    radicale.users["ana"] = "a-new-password"
    radicale.stop()
    radicale.start()
    with pytest.raises(InvalidInput, match="refused this username and password"):
        await sync(sync_fable, alice)
    status = await sync_fable.call("get_caldav_status", {}, alice)
    assert "refused" in status["last_error"]
    assert [e.caldav_href for e in (await events(sync_fable, alice)).values()] == [None]
    assert on_server(radicale, "ana") == {}


async def test_an_account_syncs_once_at_a_time(sync_fable: Fable, radicale: Radicale, alice: Caller) -> None:
    await connect(sync_fable, alice, radicale, "ana")
    for n in range(5):
        await make(sync_fable, alice, title=f"Event {n}", start=date(2026, 1, 1 + n))
    results = await asyncio.gather(*(sync_account(sync_fable, alice.user_id) for _ in range(3)),
                                   return_exceptions=True)
    done = [r for r in results if not isinstance(r, BaseException)]
    assert len(done) == 1 and done[0].pushed == 5
    assert all("a sync of this CalDAV account is running" in str(r) for r in results if isinstance(r, BaseException))
    assert len(on_server(radicale, "ana")) == 5


async def test_a_changed_occurrence_of_a_series_syncs_both_ways(
        sync_fable: Fable, radicale: Radicale, alice: Caller) -> None:
    series = await make(sync_fable, alice, title="Yoga", start=wall(2026, 3, 2, 18), end=wall(2026, 3, 2, 19),
                        timezone="Europe/Berlin", rrule="FREQ=WEEKLY;COUNT=6")
    async with sync_fable.db.transaction() as session:  # here: the second class starts an hour later
        await update_event(session, alice, series.id, EventFields(
            start=datetime(2026, 3, 9, 19, tzinfo=BERLIN), end=datetime(2026, 3, 9, 20, tzinfo=BERLIN),
            location="Park"), occurrence=datetime(2026, 3, 9, 18, tzinfo=BERLIN))
    await connect(sync_fable, alice, radicale, "ana")
    assert (await sync(sync_fable, alice))["pushed"] == 1
    obj = radicale.calendar("ana").get_event_by_uid(series.uid)
    cal = icalendar.Calendar.from_ical(obj.data)
    moved = [e for e in cal.walk("VEVENT") if e.get("recurrence-id") is not None]
    assert len(moved) == 1 and moved[0].decoded("recurrence-id").hour == 18
    assert moved[0].decoded("dtstart").hour == 19 and str(moved[0]["location"]) == "Park"

    # on the server: that change undone, and the fourth class moved to the Sunday before
    master = next(e for e in cal.walk("VEVENT") if e.get("recurrence-id") is None)
    cal.subcomponents.remove(moved[0])
    fourth = icalendar.Event()
    for name in ("uid", "summary"):
        fourth.add(name, master[name])
    berlin = master.decoded("dtstart").tzinfo
    fourth.add("recurrence-id", datetime(2026, 3, 23, 18, tzinfo=berlin))
    fourth.add("dtstart", datetime(2026, 3, 22, 10, tzinfo=berlin))
    fourth.add("dtend", datetime(2026, 3, 22, 11, tzinfo=berlin))
    fourth.add("dtstamp", datetime.now(UTC))
    cal.add_component(fourth)
    master.pop("last-modified")
    master.add("last-modified", datetime.now(UTC) + timedelta(minutes=1))
    obj.data = cal.to_ical().decode()
    obj.save()
    assert (await sync(sync_fable, alice))["pulled"] == 1
    async with sync_fable.db.reading() as session:
        overrides = (await session.execute(select(CalendarEvent).where(CalendarEvent.series_id == series.id))).scalars()
        assert [(o.recurrence_id, o.start_at) for o in overrides] == [
            (wall(2026, 3, 23, 18), datetime(2026, 3, 22, 9, tzinfo=UTC))]
    quiet = await sync(sync_fable, alice)
    assert (quiet["pulled"], quiet["pushed"]) == (0, 0)
