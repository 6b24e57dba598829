"""The service layer CalDAV sync builds on: events made, changed and deleted from Python with a
session and a caller; uids, tombstones, overrides and exceptions as sync will read them."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import select

from fable_core.daily.calendar.service import EventFields, create_event, delete_event, get_event, update_event
from fable_core.db.models import CalendarEvent, EventTombstone
from fable_core.errors import Conflict, InvalidInput, NotFound
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

PARIS = ZoneInfo("Europe/Paris")


def wall(*parts: int) -> datetime:
    """A naive date-time: wall-clock time in the event's zone (alice's, unless told)."""
    return datetime(*parts)  # noqa: DTZ001


async def test_an_event_made_from_python_has_a_uid_its_zone_and_utc_times(fable: Fable, alice: Caller) -> None:
    async with fable.db.transaction() as session:
        event = await create_event(session, alice, EventFields(title="Dentist", start=wall(2026, 12, 7, 9, 30)))
    assert event.uid.endswith("@fable") and event.timezone == "Europe/Paris"  # naive: alice's zone
    assert event.start_at == datetime(2026, 12, 7, 8, 30, tzinfo=UTC)
    assert event.end_at == datetime(2026, 12, 7, 9, 30, tzinfo=UTC)  # an hour, when no end is given
    assert event.caldav_href is None and event.created_at is not None


async def test_a_uid_from_a_server_is_kept_and_unique_per_owner(fable: Fable, alice: Caller, bob: Caller) -> None:
    fields = EventFields(title="Synced", start=date(2026, 12, 24))
    async with fable.db.transaction() as session:
        event = await create_event(session, alice, fields, uid="abc-123@example.org")
        assert event.all_day and event.end_date == date(2026, 12, 25)
        await create_event(session, bob, fields, uid="abc-123@example.org")  # bob's own calendar
    with pytest.raises(Conflict, match=r"abc-123@example\.org"):
        async with fable.db.transaction() as session:
            await create_event(session, alice, fields, uid="abc-123@example.org")


async def test_every_local_change_moves_updated_at(fable: Fable, alice: Caller) -> None:
    async with fable.db.transaction() as session:
        event = await create_event(session, alice, EventFields(title="Gym", start=wall(2026, 12, 7, 18, 0),
                                                               rrule="FREQ=WEEKLY"))
    stamps = [event.updated_at]
    for change in ({"title": "Gym!"}, {"occurrence": datetime(2026, 12, 14, 18, 0, tzinfo=PARIS)}):
        async with fable.db.transaction() as session:
            occurrence = change.pop("occurrence", None)
            await update_event(session, alice, event.id, EventFields(**change))  # type: ignore[arg-type]
            if occurrence is not None:
                await delete_event(session, alice, event.id, occurrence=occurrence)
            stamps.append((await get_event(session, alice, event.id)).updated_at)
    assert stamps == sorted(stamps) and len(set(stamps)) == 3


async def test_deleting_a_synced_event_leaves_a_tombstone(fable: Fable, alice: Caller) -> None:
    async with fable.db.transaction() as session:
        synced = await create_event(session, alice, EventFields(title="Synced", start=date(2026, 12, 24)), uid="u1")
        local = await create_event(session, alice, EventFields(title="Local", start=date(2026, 12, 25)))
        synced.caldav_href, synced.caldav_etag = "/cal/alice/u1.ics", '"e1"'
    async with fable.db.transaction() as session:
        await delete_event(session, alice, synced.id)
        await delete_event(session, alice, local.id)
    async with fable.db.reading() as session:
        stones = (await session.execute(select(EventTombstone))).scalars().all()
        left = (await session.execute(select(CalendarEvent))).scalars().all()
    assert [(s.owner_id, s.uid, s.caldav_href, s.etag) for s in stones] == [
        (alice.user_id, "u1", "/cal/alice/u1.ics", '"e1"')]
    assert left == []


async def test_an_occurrence_changed_alone_is_an_override_row_with_the_series_uid(fable: Fable, alice: Caller) -> None:
    async with fable.db.transaction() as session:
        series = await create_event(session, alice, EventFields(
            title="Standup", start=wall(2026, 12, 7, 9, 0), rrule="FREQ=DAILY;COUNT=5"))
        moved = await update_event(session, alice, series.id, EventFields(start=wall(2026, 12, 8, 11, 0)),
                                   occurrence=datetime(2026, 12, 8, 9, 0, tzinfo=PARIS))
    assert (moved.series_id, moved.uid, moved.recurrence_id) == (series.id, series.uid, wall(2026, 12, 8, 9, 0))
    assert moved.start_at == datetime(2026, 12, 8, 10, 0, tzinfo=UTC) and moved.title == "Standup"
    async with fable.db.transaction() as session:  # the same occurrence again: the same override
        again = await update_event(session, alice, series.id, EventFields(title="Standup (late)"),
                                   occurrence=datetime(2026, 12, 8, 9, 0, tzinfo=PARIS))
        assert again.id == moved.id
        with pytest.raises(NotFound, match="no occurrence"):  # COUNT=5 ends on the 11th
            await delete_event(session, alice, series.id, occurrence=datetime(2026, 12, 12, 9, 0, tzinfo=PARIS))
        with pytest.raises(NotFound):  # an override's own id is no event
            await get_event(session, alice, moved.id)


async def test_someone_elses_event_is_not_found(fable: Fable, alice: Caller, bob: Caller) -> None:
    async with fable.db.transaction() as session:
        event = await create_event(session, alice, EventFields(title="Mine", start=date(2026, 12, 24)))
    for attempt in (get_event, lambda s, c, i: update_event(s, c, i, EventFields(title="x")), delete_event):
        with pytest.raises(NotFound, match=f"event {event.id} not found"):
            async with fable.db.transaction() as session:
                await attempt(session, bob, event.id)


async def test_bad_input_names_the_value_and_writes_nothing(fable: Fable, alice: Caller) -> None:
    bad = [
        (EventFields(title="x", start=wall(2026, 12, 7, 9), end=wall(2026, 12, 7, 8)), "before start"),
        (EventFields(title="x", start=date(2026, 12, 7), end=date(2026, 12, 7)), "must be after start"),
        (EventFields(title="x", start=wall(2026, 12, 7, 9), rrule="FREQ=SOMETIMES"), "FREQ=DAILY"),
        (EventFields(title="x", start=wall(2026, 12, 7, 9), timezone="Europe/Pari"), "Europe/Paris"),
        (EventFields(title="x", start=wall(2026, 12, 7, 9), color="reddish"), "'reddish'"),
        (EventFields(title="x", start=date(2026, 12, 7), all_day=False), "'2026-12-07' is a date"),
        (EventFields(title="x", start=wall(2026, 12, 7, 9), note_id=999), "note 999 not found"),
    ]
    for fields, said in bad:
        with pytest.raises((InvalidInput, NotFound), match=said):
            async with fable.db.transaction() as session:
                await create_event(session, alice, fields)
    async with fable.db.reading() as session:
        assert (await session.execute(select(CalendarEvent))).first() is None


async def test_a_refused_change_leaves_the_session_as_it_was(fable: Fable, alice: Caller) -> None:
    """Sync may go on in its session after a refusal: nothing of the refused change is pending."""
    async with fable.db.transaction() as session:
        event = await create_event(session, alice, EventFields(title="Gym", start=wall(2026, 12, 7, 18, 0),
                                                               rrule="FREQ=WEEKLY"))
        with pytest.raises(NotFound, match="note 999 not found"):
            await update_event(session, alice, event.id, EventFields(title="Moved", start=wall(2026, 12, 8, 9, 0),
                                                                     note_id=999))
        with pytest.raises(InvalidInput, match="'nope' is not a colour"):
            await update_event(session, alice, event.id, EventFields(title="x", color="nope"),
                               occurrence=datetime(2026, 12, 14, 18, 0, tzinfo=PARIS))
        await session.flush()
    async with fable.db.reading() as session:
        rows = (await session.execute(select(CalendarEvent.title, CalendarEvent.start_at))).all()
    assert rows == [("Gym", datetime(2026, 12, 7, 17, 0, tzinfo=UTC))]
