"""The two-way sync of one user's events with their CalDAV calendar, on a schedule and on demand.

One sync of an account, holding no database connection while it talks to the server:

1. **Claim** the account (a lease in ``caldav_accounts.claimed_until``): one sync per account at
   a time across every process; a process that dies lets its lease run out (:data:`LEASE`).
2. **Pull** what changed on the server since the stored sync token (a sync-collection REPORT;
   a token the server forgot, or none, lists everything; a server without sync-collection is
   compared by etag), then apply it in one transaction with the new token: a new object becomes
   an event (matched by UID first: an event Fable already has is never added twice), a changed
   one updates its event, a deleted one deletes it.
3. **Push** the local changes: events changed since they were last in sync are PUT (a new one
   at ``<calendar>/<uid>.ics``, ``If-None-Match: *``; a known one with ``If-Match`` its etag),
   events deleted here (``event_tombstones``) are DELETEd with ``If-Match``.
4. **Record** the outcome: the new hrefs and etags, and the account's status (last success, or
   the error, the failures in a row and the next attempt, backing off).

**Both sides edited** (an event changed here since its last sync and on the server too, found
by the pull or by a failed ``If-Match``): the later modification wins, the server's
``LAST-MODIFIED`` against the event's ``updated_at`` (a tie goes to the server), and the loser
is kept whole in ``event_versions`` (``list_event_versions``). A server deletion of an event
edited here deletes it too, the local edit kept as a version; a server edit of an event deleted
here after that deletion brings it back, an older one is deleted.

A failure anywhere (server down, login refused, a timeout) changes nothing that was not already
true on both sides: the pull's changes and token commit together after the server answered,
and each push's result is recorded for what the server did accept.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field
from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.daily.caldav import ical, local, remote
from fable_core.daily.caldav.accounts import CaldavStatus, account_server, status_of
from fable_core.db.models import CaldavAccount, EventVersion
from fable_core.errors import Conflict, FableError, NotFound
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import of_user
from fable_core.tools.caller import Caller
from fable_core.tools.clock import user_timezone
from fable_core.tools.jobs import job

if TYPE_CHECKING:
    from fable_core.config import Settings
    from fable_core.db.database import Database
    from fable_core.tools.runtime import Runtime

__all__ = ["LEASE", "Report", "SyncResult", "backoff", "sync_account",
           "sync_due"]

LEASE = timedelta(seconds=remote.DEADLINE * 4)  # pull, push, a second push after conflicts, and slack
MAX_BACKOFF = timedelta(hours=1)
CONCURRENT_ACCOUNTS = 4  # accounts one scheduled run syncs at once (each in a worker thread)
_log = logging.getLogger(__name__)


@dataclass(slots=True)
class Report:
    pulled: int = 0
    pushed: int = 0
    deleted: int = 0
    conflicts: int = 0
    again: list[int] = field(default_factory=list)  # events to push once more (won a conflict)


class SyncResult(BaseModel):
    pulled: int = Field(description="Events added or changed here from the server.")
    pushed: int = Field(description="Events sent to the server.")
    deleted: int = Field(description="Events deleted, on either side.")
    conflicts: int = Field(0, exclude_if=lambda n: not n,
                           description="Both-sides edits: the later won, the other is in list_event_versions.")
    status: CaldavStatus


def backoff(failures: int) -> timedelta:
    """How long after the ``failures``-th failure in a row the next attempt waits: a minute,
    doubling, at most :data:`MAX_BACKOFF`."""
    wait: timedelta = timedelta(minutes=1) * 2 ** max(0, min(failures - 1, 10))
    return min(wait, MAX_BACKOFF)


# --- claim and record --------------------------------------------------------------------------


async def _claim(db: Database, user_id: int) -> CaldavAccount | None:
    now = datetime.now(UTC)
    async with db.transaction() as session:
        return (await session.execute(
            update(CaldavAccount)
            .where(of_user(CaldavAccount, user_id), CaldavAccount.calendar_href.is_not(None),
                   or_(CaldavAccount.claimed_until.is_(None), CaldavAccount.claimed_until < now))
            .values(claimed_until=now + LEASE, last_attempt_at=now)
            .returning(CaldavAccount))).scalar_one_or_none()


async def _finish(db: Database, settings: Settings, user_id: int, token: str | None, error: str | None) -> None:
    now = datetime.now(UTC)
    async with db.transaction() as session:
        account = await session.get(CaldavAccount, user_id, with_for_update=True)
        if account is None:  # disconnected meanwhile
            return
        account.claimed_until = None
        if error is None:
            account.last_success_at, account.last_error, account.failures = now, None, 0
            account.next_attempt_at = now + timedelta(seconds=settings.fable_caldav_sync_interval)
        else:
            account.last_error, account.failures = error[:1000], account.failures + 1
            account.next_attempt_at = now + backoff(account.failures)


async def sync_account(fable: Runtime, user_id: int) -> Report:
    """Sync ``user_id``'s account once, now. NotFound without an account and a calendar;
    Conflict while another sync of it runs; the server's error (recorded in the status too)."""
    account = await _claim(fable.db, user_id)
    if account is None:
        await _why_not(fable.db, user_id)
    assert account is not None
    try:
        report = await _sync(fable, account)
    except FableError as e:
        await _finish(fable.db, fable.settings, user_id, None, e.message)
        raise
    except BaseException:
        await asyncio.shield(_finish(fable.db, fable.settings, user_id, None, "the sync failed unexpectedly"))
        raise
    await _finish(fable.db, fable.settings, user_id, None, None)
    return report


async def _why_not(db: Database, user_id: int) -> None:
    async with db.reading() as session:
        account = await session.get(CaldavAccount, user_id)
    if account is None:
        raise NotFound("no CalDAV account is connected: connect one in Settings → Calendar sync")
    if account.calendar_href is None:
        raise NotFound("no calendar is chosen for the CalDAV account: choose one first")
    raise Conflict("a sync of this CalDAV account is running; try again in a moment")


# --- the sync ----------------------------------------------------------------------------------


async def _sync(fable: Runtime, account: CaldavAccount) -> Report:
    server = account_server(account, fable.settings)
    calendar, owner = account.calendar_href, account.user_id
    assert calendar is not None
    async with fable.db.reading() as session:
        known = await local.known_etags(session, owner)
        zone = await user_timezone(session, Caller(user_id=owner))
    changes = await remote.run(server, partial(remote.changes, calendar=calendar, token=account.sync_token,
                                               known=known))
    report = Report()
    async with fable.db.transaction() as session:
        await _apply_pull(session, owner, zone, changes, report)
        await session.execute(update(CaldavAccount).where(of_user(CaldavAccount, owner))
                              .values(sync_token=changes.token))
    for _round in range(2):
        async with fable.db.reading() as session:
            outgoing = await local.outgoing(session, owner, only=report.again if _round else None)
        if outgoing.empty:
            break
        report.again = []
        results = await remote.run(server, partial(_push_all, calendar=calendar, outgoing=outgoing))
        async with fable.db.transaction() as session:
            await _record_push(session, owner, zone, results, report)
        if not report.again:
            break
    return report


async def _apply_pull(session: AsyncSession, owner: int, zone: str, changes: remote.Changes, report: Report) -> None:
    parsed: list[tuple[remote.RemoteObject, ical.Fields]] = []
    for obj in changes.changed:
        try:
            parsed.append((obj, ical.parse(obj.ical, zone)))
        except ical.Unusable as e:
            _log.info("caldav: skipping %s of user %s: %s", obj.href, owner, e)
    # the events they may be, in one query (locked): by href, else by UID
    found = await local.matching(session, owner, [o.href for o, _ in parsed], [f.uid for _, f in parsed])
    by_href = {e.href: e for e in found if e.href is not None}
    by_uid = {e.fields.uid: e for e in found}
    for obj, fields in parsed:
        await _take(session, owner, obj, fields, by_href.get(obj.href) or by_uid.get(fields.uid), report)
    for href in changes.deleted:
        event = await local.with_href(session, owner, href)
        if event is not None:
            if event.dirty:
                await _keep(session, owner, event.fields, "local", "deleted", ical.render(event.fields))
            await local.delete_event(session, event.id)
            report.deleted += 1
        await local.drop_tombstones(session, owner, href=href)


async def _take_server_version(session: AsyncSession, owner: int, obj: remote.RemoteObject, fields: ical.Fields,
                               report: Report) -> None:
    event = await local.with_href(session, owner, obj.href) or await local.with_uid(session, owner, fields.uid)
    await _take(session, owner, obj, fields, event, report)


async def _take(session: AsyncSession, owner: int, obj: remote.RemoteObject, fields: ical.Fields,
                event: local.LocalEvent | None, report: Report) -> None:
    """A server object that is new or changed: into its ``event``, unless that event's own edit
    is later (a conflict either way)."""
    if event is None:
        tombstone = await local.tombstone(session, owner, obj.href, fields.uid)
        if tombstone is not None and not _later(fields.modified, tombstone.deleted_at):
            await local.retarget_tombstone(session, tombstone.id, obj.href, obj.etag)  # our deletion is later
            return
        if tombstone is not None:
            await local.drop_tombstones(session, owner, href=obj.href, uid=fields.uid)
            report.conflicts += 1
        if await local.save(session, owner, None, fields, obj.href, obj.etag):
            report.pulled += 1
        return
    if event.dirty and not ical.same(event.fields, fields):
        report.conflicts += 1
        if not _later(fields.modified, event.updated_at):  # ours is later: keep it, push it over theirs
            await _keep(session, owner, fields, "server", "conflict", obj.ical)
            await local.link(session, event.id, obj.href, obj.etag)
            report.again.append(event.id)
            return
        await _keep(session, owner, event.fields, "local", "conflict", ical.render(event.fields))
    if ical.same(event.fields, fields):  # nothing to change: only the link and the mark
        await local.link(session, event.id, obj.href, obj.etag, synced=event.updated_at)
    elif await local.save(session, owner, event.id, fields, obj.href, obj.etag):
        report.pulled += 1


def _later(server_modified: datetime | None, local_modified: datetime) -> bool:
    """Whether the server's version wins: modified at or after the local one, to the second
    (iCalendar's precision; no LAST-MODIFIED: the server's, which is what a server without one
    would show anyway)."""
    return server_modified is None or server_modified >= local_modified.replace(microsecond=0)


async def _keep(session: AsyncSession, owner: int, fields: ical.Fields, side: str, reason: str, text: str) -> None:
    session.add(EventVersion(user_id=owner, uid=fields.uid, side=side, reason=reason, title=fields.title[:500],
                             ical=text, modified_at=fields.modified))
    await session.flush()


# --- push (in a worker thread) -----------------------------------------------------------------


@dataclass(slots=True)
class _Outcome:
    kind: str  # "put", "deleted", "stale-put", "stale-delete"
    key: int  # event id, or tombstone id
    href: str
    etag: str = ""
    synced: datetime | None = None  # the event's updated_at as sent
    server: remote.RemoteObject | None = None  # the server's version, when stale


def _push_all(client: Any, calendar: str, outgoing: local.Outgoing) -> list[_Outcome]:
    outcomes: list[_Outcome] = []
    for stone in outgoing.tombstones:
        try:
            remote.delete(client, stone.caldav_href, stone.etag)
            outcomes.append(_Outcome("deleted", stone.id, stone.caldav_href))
        except remote.Stale:
            outcomes.append(_Outcome("stale-delete", stone.id, stone.caldav_href,
                                     server=remote.fetch(client, calendar, stone.caldav_href)))
    for event in outgoing.events:
        try:
            href, etag = remote.put(client, calendar, event.href, event.fields.uid, ical.render(event.fields),
                                    event.etag)
            outcomes.append(_Outcome("put", event.id, href, etag, synced=event.updated_at))
        except remote.Stale as e:
            href = str(e)
            outcomes.append(_Outcome("stale-put", event.id, href, server=remote.fetch(client, calendar, href)))
    return outcomes


async def _record_push(session: AsyncSession, owner: int, zone: str, outcomes: Sequence[_Outcome],
                       report: Report) -> None:
    for o in outcomes:
        if o.kind == "put":
            await local.link(session, o.key, o.href, o.etag, synced=o.synced)
            report.pushed += 1
        elif o.kind == "deleted":
            await local.drop_tombstone(session, o.key)
            report.deleted += 1
        elif o.kind == "stale-delete":
            if o.server is None:
                await local.drop_tombstone(session, o.key)
            else:
                await _take_server_version(session, owner, o.server, ical.parse(o.server.ical, zone), report)
        elif o.server is None:  # stale-put of an object gone from the server: PUT it as new next time
            await local.link(session, o.key, None, None)
            report.again.append(o.key)
        else:
            await _take_server_version(session, owner, o.server, ical.parse(o.server.ical, zone), report)


# --- schedule ------------------------------------------------------------------------------------


async def sync_due(fable: Runtime, limit: int = 100) -> int:
    """Sync the accounts whose next attempt is due, :data:`CONCURRENT_ACCOUNTS` at a time;
    how many were tried. Each failure is recorded in its account's status, never raised."""
    now = datetime.now(UTC)
    async with fable.db.reading() as session:
        due = list((await session.execute(
            select(CaldavAccount.user_id)
            .where(CaldavAccount.calendar_href.is_not(None), CaldavAccount.next_attempt_at <= now,
                   or_(CaldavAccount.claimed_until.is_(None), CaldavAccount.claimed_until < now))
            .order_by(CaldavAccount.next_attempt_at).limit(limit))).scalars())
    slots = asyncio.Semaphore(CONCURRENT_ACCOUNTS)

    async def one(user_id: int) -> None:
        async with slots:
            try:
                await sync_account(fable, user_id)
            except FableError as e:
                _log.info("caldav sync of user %s: %s", user_id, e.message)

    await asyncio.gather(*(one(u) for u in due))
    return len(due)


@job(every=60)
async def sync_calendars(fable: Runtime) -> None:
    """Sync every CalDAV account whose next attempt is due."""
    await sync_due(fable)


# --- tools ---------------------------------------------------------------------------------------


@tool(group="calendar", title="Sync the calendar now", scope="write", idempotent=True, transaction="phases",
      open_world=True,
      route=Route("POST", "/caldav/sync"))
async def sync_calendar(ctx: Context) -> SyncResult:
    """Sync your events with your CalDAV calendar now, both ways."""
    report = await sync_account(ctx.fable, ctx.user_id)
    async with ctx.reading() as session:
        status = status_of(await session.get(CaldavAccount, ctx.user_id))
    return SyncResult(pulled=report.pulled, pushed=report.pushed, deleted=report.deleted,
                      conflicts=report.conflicts, status=status)


