"""The events' side of the sync: a user's events as the sync reads and writes them.

Events are created and changed through the calendar's own service
(:mod:`fable_core.daily.calendar.service`), so that a synced event obeys every rule a typed one does
(times, zones, rules, spans); only the sync's own columns (``caldav_href``, ``caldav_etag``)
and its marks (``event_sync_marks``) are written here directly, without moving ``updated_at``.
A server deletion deletes the row itself: no tombstone, the server already forgot it.

An event is *dirty* (changed here since it was last the same on both sides) when it has no
mark, or its row or one of its changed occurrences was updated after its mark.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import Select, delete, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from fable_core.daily.caldav import ical
from fable_core.daily.calendar.service import EventFields, create_event, update_event
from fable_core.db.models import CalendarEvent, EventSyncMark, EventTombstone
from fable_core.errors import FableError
from fable_core.tools.access import of_user, owner_column_is
from fable_core.tools.caller import Caller

__all__ = ["LocalEvent", "Outgoing", "delete_event", "drop_tombstone", "drop_tombstones", "fields_of", "forget",
           "known_etags", "link", "matching", "outgoing", "retarget_tombstone", "save", "tombstone", "with_href",
           "with_uid"]

_COLOR = re.compile(r"^#[0-9a-f]{6}$")
NO_TITLE = "(no title)"
_log = logging.getLogger(__name__)


@dataclass(slots=True)
class LocalEvent:
    id: int
    fields: ical.Fields
    href: str | None
    etag: str | None
    updated_at: datetime  # the latest change of the row or its overrides
    dirty: bool


@dataclass(slots=True)
class Outgoing:
    events: list[LocalEvent] = field(default_factory=list)
    tombstones: list[EventTombstone] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.events and not self.tombstones


def _latest() -> tuple[Any, Any]:
    """The latest ``updated_at`` of a series and its overrides, and its mark's time."""
    other = aliased(CalendarEvent)
    latest = (select(func.max(other.updated_at))
              .where(or_(other.id == CalendarEvent.id, other.series_id == CalendarEvent.id))
              .correlate(CalendarEvent).scalar_subquery())
    return latest, EventSyncMark.synced_at


def _events(owner: int) -> Select[Any]:
    latest, synced = _latest()
    return (select(CalendarEvent, latest, synced)
            .outerjoin(EventSyncMark, EventSyncMark.event_id == CalendarEvent.id)
            .where(of_user(CalendarEvent, owner), CalendarEvent.series_id.is_(None)))


async def _load(session: AsyncSession, stmt: Select[Any]) -> list[LocalEvent]:
    """The events ``stmt`` selects (with :func:`_events`' columns), each with its overrides."""
    found = (await session.execute(stmt)).all()
    ids = [row.id for row, _, _ in found]
    overrides: dict[int, list[CalendarEvent]] = {}
    if ids:
        for o in (await session.execute(select(CalendarEvent).where(CalendarEvent.series_id.in_(ids))
                                        .order_by(CalendarEvent.recurrence_id))).scalars():
            overrides.setdefault(o.series_id or 0, []).append(o)
    return [LocalEvent(row.id, fields_of(row, latest, overrides.get(row.id, [])), row.caldav_href, row.caldav_etag,
                       latest, synced is None or latest > synced) for row, latest, synced in found]


def fields_of(row: CalendarEvent, modified: datetime | None = None,
              overrides: Sequence[CalendarEvent] = ()) -> ical.Fields:
    """``row`` (a series or single event, with its ``overrides``) as the fields the sync sends."""
    if row.all_day:
        assert row.start_date is not None and row.end_date is not None
        start: datetime | date = row.start_date
        end: datetime | date = row.end_date
        exdates: list[datetime | date] = [d.date() for d in row.exdates]
    else:
        assert row.start_at is not None and row.end_at is not None
        zone = ZoneInfo(row.timezone or "UTC")
        start, end = row.start_at.astimezone(UTC), row.end_at.astimezone(UTC)
        exdates = [d.replace(tzinfo=zone).astimezone(UTC) for d in row.exdates]
    return ical.Fields(
        uid=row.uid, title=row.title, start=start, end=end, all_day=row.all_day,
        timezone=None if row.all_day else row.timezone, description=row.description, location=row.location,
        color=row.color, rrule=row.rrule, exdates=sorted(exdates, key=_order), modified=modified or row.updated_at,
        overrides=[_override(o, row) for o in overrides] if row.rrule else [])


def _override(row: CalendarEvent, series: CalendarEvent) -> ical.Fields:
    assert row.recurrence_id is not None
    key = row.recurrence_id
    original = key.date() if series.all_day else key.replace(tzinfo=ZoneInfo(series.timezone or "UTC")).astimezone(UTC)
    return replace(fields_of(row), recurrence_id=original, modified=None, rrule=None, exdates=[],
                   timezone=None if series.all_day else series.timezone)


def _order(value: datetime | date) -> tuple[int, str]:
    return (0, value.isoformat())


async def known_etags(session: AsyncSession, owner: int) -> dict[str, str]:
    """Each href Fable knows on the server, and the etag it had when last synced: the synced
    events', and the deleted ones' not yet deleted there (unchanged there, they are no news)."""
    rows = await session.execute(select(CalendarEvent.caldav_href, CalendarEvent.caldav_etag).where(
        of_user(CalendarEvent, owner), CalendarEvent.series_id.is_(None), CalendarEvent.caldav_href.is_not(None)))
    stones = await session.execute(select(EventTombstone.caldav_href, EventTombstone.etag).where(
        owner_column_is(EventTombstone.owner_id, owner)))
    return {str(href): etag or "" for href, etag in [*stones, *rows]}


async def _one(session: AsyncSession, stmt: Select[Any]) -> LocalEvent | None:
    found = await _load(session, stmt.with_for_update(of=CalendarEvent).limit(1))
    return found[0] if found else None


async def with_href(session: AsyncSession, owner: int, href: str) -> LocalEvent | None:
    return await _one(session, _events(owner).where(CalendarEvent.caldav_href == href))


async def with_uid(session: AsyncSession, owner: int, uid: str) -> LocalEvent | None:
    return await _one(session, _events(owner).where(CalendarEvent.uid == uid))


async def matching(session: AsyncSession, owner: int, hrefs: Sequence[str], uids: Sequence[str]) -> list[LocalEvent]:
    """The events (locked) linked to one of ``hrefs`` or with one of ``uids``."""
    if not hrefs and not uids:
        return []
    return await _load(session, _events(owner).where(or_(CalendarEvent.caldav_href.in_(hrefs),
                                                         CalendarEvent.uid.in_(uids)))
                       .with_for_update(of=CalendarEvent))


async def outgoing(session: AsyncSession, owner: int, only: Sequence[int] | None = None) -> Outgoing:
    """What the next push sends: dirty events (or only those of ``only``) and tombstones."""
    latest, synced = _latest()
    stmt = _events(owner).where(or_(synced.is_(None), latest > synced))
    if only is not None:
        stmt = stmt.where(CalendarEvent.id.in_(only))
    events = await _load(session, stmt.order_by(CalendarEvent.id))
    stones = [] if only is not None else list(await session.scalars(
        select(EventTombstone).where(owner_column_is(EventTombstone.owner_id, owner)).order_by(EventTombstone.id)))
    return Outgoing(events, stones)


def _service_fields(f: ical.Fields) -> EventFields:
    clear = {name for name, value in (("color", _color(f.color)), ("rrule", f.rrule)) if value is None}
    if not f.exdates or f.rrule is None:
        clear.add("exdates")
    return EventFields(
        title=(f.title.strip()[:300] or NO_TITLE), start=f.start, end=f.end, all_day=f.all_day,
        timezone=f.timezone if not f.all_day else None, description=f.description[:20_000],
        location=f.location.strip()[:500], color=_color(f.color), rrule=f.rrule,
        exdates=list(f.exdates) if f.exdates and f.rrule is not None else None, clear=frozenset(clear))


def _color(value: str | None) -> str | None:
    color = (value or "").strip().lower()
    return color if _COLOR.match(color) else None


async def save(session: AsyncSession, owner: int, event_id: int | None, f: ical.Fields, href: str,
               etag: str) -> bool:
    """The server's version ``f`` into event ``event_id`` (None: a new event), linked to
    ``href``/``etag`` and marked in sync; False (nothing written) when the calendar refuses it
    (an RRULE it cannot expand, a year out of range), which is logged."""
    caller = Caller(user_id=owner)
    try:
        async with session.begin_nested():
            if event_id is None:
                row = await create_event(session, caller, _service_fields(f), uid=f.uid[:255])
                event_id = row.id
            else:
                await update_event(session, caller, event_id, _service_fields(f))
    except FableError as e:
        _log.info("caldav: %s of user %s not taken: %s", href, owner, e.message)
        return False
    await _save_overrides(session, caller, event_id, f, href)
    await link(session, event_id, href, etag)
    await _mark(session, event_id)
    return True


async def _save_overrides(session: AsyncSession, caller: Caller, series_id: int, f: ical.Fields, href: str) -> None:
    """The series' changed occurrences as the server has them: each one it has, changed here
    too; the ones it does not have, deleted (their occurrences as the series makes them)."""
    kept: list[datetime] = []
    for o in f.overrides if f.rrule is not None else []:
        assert o.recurrence_id is not None
        change = replace(_service_fields(o), all_day=None, timezone=None, rrule=None, exdates=None,
                         clear=_service_fields(o).clear & {"color"})
        try:
            async with session.begin_nested():
                row = await update_event(session, caller, series_id, change, occurrence=o.recurrence_id)
        except FableError as e:
            _log.info("caldav: an occurrence in %s of user %s not taken: %s", href, caller.user_id, e.message)
            continue
        assert row.recurrence_id is not None
        kept.append(row.recurrence_id)
    await session.execute(delete(CalendarEvent).where(CalendarEvent.series_id == series_id,
                                                      CalendarEvent.recurrence_id.not_in(kept))
                          .execution_options(synchronize_session=False))


async def _mark(session: AsyncSession, event_id: int, synced: datetime | None = None) -> None:
    """The event is in sync as of ``synced`` (default: its latest change now)."""
    other = aliased(CalendarEvent)
    when = synced if synced is not None else (select(func.max(other.updated_at))
                                              .where(or_(other.id == event_id, other.series_id == event_id))
                                              .scalar_subquery())
    stmt = pg_insert(EventSyncMark).values(event_id=event_id, synced_at=when)
    await session.execute(stmt.on_conflict_do_update(index_elements=[EventSyncMark.event_id],
                                                     set_={"synced_at": stmt.excluded.synced_at}))


async def link(session: AsyncSession, event_id: int, href: str | None, etag: str | None, *,
               synced: datetime | None = None) -> None:
    """Set the event's href and etag (``updated_at`` unmoved); with ``synced``, mark it too."""
    await session.execute(update(CalendarEvent).where(CalendarEvent.id == event_id)
                          .values(caldav_href=href, caldav_etag=etag, updated_at=CalendarEvent.updated_at)
                          .execution_options(synchronize_session=False))
    if synced is not None:
        await _mark(session, event_id, synced)


async def delete_event(session: AsyncSession, event_id: int) -> None:
    """Delete the event (and its overrides): the server deleted it, so no tombstone."""
    await session.execute(delete(CalendarEvent).where(CalendarEvent.id == event_id)
                          .execution_options(synchronize_session=False))


async def tombstone(session: AsyncSession, owner: int, href: str, uid: str) -> EventTombstone | None:
    return (await session.execute(select(EventTombstone).where(
        owner_column_is(EventTombstone.owner_id, owner),
        or_(EventTombstone.caldav_href == href, EventTombstone.uid == uid))
        .order_by(EventTombstone.id.desc()).limit(1))).scalar_one_or_none()


async def retarget_tombstone(session: AsyncSession, tombstone_id: int, href: str, etag: str) -> None:
    await session.execute(update(EventTombstone).where(EventTombstone.id == tombstone_id)
                          .values(caldav_href=href, etag=etag))


async def drop_tombstone(session: AsyncSession, tombstone_id: int) -> None:
    await session.execute(delete(EventTombstone).where(EventTombstone.id == tombstone_id))


async def drop_tombstones(session: AsyncSession, owner: int, *, href: str, uid: str | None = None) -> None:
    match = EventTombstone.caldav_href == href if uid is None else or_(
        EventTombstone.caldav_href == href, EventTombstone.uid == uid)
    await session.execute(delete(EventTombstone).where(owner_column_is(EventTombstone.owner_id, owner), match))


async def forget(session: AsyncSession, owner: int) -> None:
    """Forget every event's link to a calendar (href, etag, mark) and the deletions not yet sent:
    the account's server or calendar changed, or it was disconnected. The events stay."""
    await session.execute(update(CalendarEvent)
                          .where(of_user(CalendarEvent, owner), CalendarEvent.caldav_href.is_not(None))
                          .values(caldav_href=None, caldav_etag=None, updated_at=CalendarEvent.updated_at)
                          .execution_options(synchronize_session=False))
    await session.execute(delete(EventSyncMark).where(EventSyncMark.event_id.in_(
        select(CalendarEvent.id).where(of_user(CalendarEvent, owner)))))
    await session.execute(delete(EventTombstone).where(owner_column_is(EventTombstone.owner_id, owner)))
