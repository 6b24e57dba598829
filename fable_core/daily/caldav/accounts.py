"""Each user's CalDAV account as tools: connect (URL and login, checked against the server),
discover and choose a calendar, show the sync's status, disconnect.

The password is stored sealed with the instance's secret key (:mod:`fable_core.infra.sealed`) and no
tool returns it. The URL is the user's: it must be ``https`` (plain ``http`` only to a host the
operator lets through, ``FABLE_CALDAV_ALLOW_HOSTS``), and every conversation with it goes
through the SSRF guard (:mod:`fable_core.daily.caldav.remote`). Connecting logs in and lists the
calendars first: a refused login or an unreachable server is a clear error and stores nothing.
One calendar found is chosen at once; with several, the user chooses one.

These tools are for the settings page and the CLI (``agents=False``): a password has no
business passing through a model. Agents see :func:`~fable_core.daily.caldav.sync.sync_calendar`,
whose result is the same status.

Changing the server, the login or the calendar, or disconnecting, forgets the sync token and
the events' links to the old calendar (their href and etag); the events themselves stay. A
later sync with a calendar pushes them as new, or, when the calendar already holds them,
matches them by UID: never twice.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, StringConstraints
from sqlalchemy import delete, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.config import Settings
from fable_core.daily.caldav import local, remote
from fable_core.db.models import CaldavAccount
from fable_core.errors import InvalidInput, NotFound, Unavailable
from fable_core.infra.sealed import Unreadable, seal, unseal
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import owned_by
from fable_core.tools.results import absent_when_none

__all__ = ["CaldavCalendar", "CaldavCalendars", "CaldavStatus", "account_server", "status_of"]

PURPOSE = "caldav password"
Url = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)]
Username = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
Password = Annotated[str, StringConstraints(min_length=1, max_length=1000)]
Href = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)]


class CaldavCalendar(BaseModel):
    href: str = Field(description="Its path on the server: what choose_caldav_calendar takes.")
    name: str


class CaldavCalendars(BaseModel):
    calendars: list[CaldavCalendar]
    chosen: str | None = absent_when_none("The href of the calendar Fable syncs with.")


class CaldavStatus(BaseModel):
    connected: bool
    url: str | None = absent_when_none()
    username: str | None = absent_when_none()
    calendar: str | None = absent_when_none("The calendar's name.")
    calendar_href: str | None = absent_when_none()
    last_success_at: datetime | None = absent_when_none("When a sync last succeeded.")
    last_error: str | None = absent_when_none("Why the last attempt failed (cleared by a success).")
    failures: int = Field(0, exclude_if=lambda n: not n, description="Attempts failed in a row.")
    next_attempt_at: datetime | None = absent_when_none("When the next scheduled sync runs.")


def status_of(account: CaldavAccount | None) -> CaldavStatus:
    if account is None:
        return CaldavStatus(connected=False)
    return CaldavStatus(
        connected=True, url=account.url, username=account.username, calendar=account.calendar_name,
        calendar_href=account.calendar_href, last_success_at=account.last_success_at,
        last_error=account.last_error, failures=account.failures,
        next_attempt_at=account.next_attempt_at if account.calendar_href else None)


def account_server(account: CaldavAccount, settings: Settings) -> remote.Server:
    """How to reach ``account``'s server (its password unsealed)."""
    try:
        password = unseal(account.password_sealed, settings.secret_key(), PURPOSE)
    except Unreadable as e:
        raise Unavailable("the stored CalDAV password cannot be read (the secret key changed since it was "
                          "saved): connect the account again") from e
    return remote.Server(account.url, account.username, password, tuple(settings.fable_caldav_allow_hosts))


def _check_url(url: str, settings: Settings) -> None:
    scheme = urlsplit(url).scheme
    if scheme != "https" and not (scheme == "http" and remote.exempt(settings.fable_caldav_allow_hosts, url)):
        raise InvalidInput(f"the CalDAV URL must be an https URL, not {url[:100]!r}", field="url")


async def _account(session: AsyncSession, user_id: int) -> CaldavAccount:
    account = await session.get(CaldavAccount, user_id)
    if account is None:
        raise NotFound("no CalDAV account is connected: connect one first")
    return account


def _listed(found: list[remote.RemoteCalendar], chosen: str | None) -> CaldavCalendars:
    return CaldavCalendars(calendars=[CaldavCalendar(href=c.href, name=c.name) for c in found], chosen=chosen)


@tool(group="calendar", title="Connect a CalDAV account", scope="write", idempotent=True, agents=False,
      transaction="phases",
      open_world=True, route=Route("PUT", "/caldav/account"))
async def connect_caldav(ctx: Context, url: Url, username: Username, password: Password) -> CaldavCalendars:
    """Connect your CalDAV server (its URL and your login, checked by logging in); lists its calendars."""
    _check_url(url, ctx.settings)
    found = await remote.run(remote.Server(url, username, password, tuple(ctx.settings.fable_caldav_allow_hosts)),
                             remote.calendars)
    sealed = seal(password, ctx.settings.secret_key(), PURPOSE)
    fresh = {"password_sealed": sealed, "last_error": None, "failures": 0, "next_attempt_at": datetime.now(UTC)}
    async with ctx.transaction() as session:
        before = await session.get(CaldavAccount, ctx.user_id, with_for_update=True)
        if before is not None and (before.url, before.username) == (url, username) and any(
                c.href == before.calendar_href for c in found):
            # the same login again (a new password): the sync goes on where it was
            await session.execute(update(CaldavAccount).where(owned_by(CaldavAccount, ctx.caller)).values(**fresh))
            return _listed(found, before.calendar_href)
        chosen = found[0] if len(found) == 1 else None
        values = {"url": url, "username": username, "calendar_href": chosen.href if chosen else None,
                  "calendar_name": chosen.name if chosen else None, "sync_token": None, **fresh}
        await local.forget(session, ctx.user_id)
        await session.execute(pg_insert(CaldavAccount).values(user_id=ctx.user_id, **values)
                              .on_conflict_do_update(index_elements=[CaldavAccount.user_id], set_=values))
        return _listed(found, chosen.href if chosen else None)


@tool(group="calendar", title="List the CalDAV account's calendars", scope="read", agents=False, transaction="phases",
      open_world=True, route=Route("GET", "/caldav/calendars"))
async def list_caldav_calendars(ctx: Context) -> CaldavCalendars:
    """The calendars on your connected CalDAV server, and which one Fable syncs with."""
    async with ctx.reading() as session:
        account = await _account(session, ctx.user_id)
        server, chosen = account_server(account, ctx.settings), account.calendar_href
    return _listed(await remote.run(server, remote.calendars), chosen)


@tool(group="calendar", title="Choose the calendar to sync", scope="write", idempotent=True, agents=False,
      transaction="phases",
      open_world=True, route=Route("PUT", "/caldav/calendar"))
async def choose_caldav_calendar(ctx: Context, calendar: Href) -> CaldavStatus:
    """Sync with this calendar (an href from list_caldav_calendars)."""
    async with ctx.reading() as session:
        server = account_server(await _account(session, ctx.user_id), ctx.settings)
    found = {c.href: c for c in await remote.run(server, remote.calendars)}
    if calendar not in found:
        raise InvalidInput(f"the CalDAV server has no calendar {calendar[:200]!r} for this login; "
                           f"choose one of: {', '.join(sorted(found))[:500]}", field="calendar")
    async with ctx.transaction() as session:
        account = await _account(session, ctx.user_id)
        if account.calendar_href != calendar:
            await local.forget(session, ctx.user_id)
            account.calendar_href, account.sync_token = calendar, None
        account.calendar_name = found[calendar].name
        account.next_attempt_at = datetime.now(UTC)
        await session.flush()
        return status_of(account)


@tool(group="calendar", title="Show the calendar sync's status", scope="read", agents=False,
      route=Route("GET", "/caldav/status"))
async def get_caldav_status(ctx: Context) -> CaldavStatus:
    """Your CalDAV account and its sync: last success, last error, next attempt (never the password)."""
    return status_of(await ctx.session.get(CaldavAccount, ctx.user_id))


@tool(group="calendar", title="Disconnect the CalDAV account", scope="write", destructive=True, idempotent=True,
      agents=False,
      route=Route("DELETE", "/caldav/account"))
async def disconnect_caldav(ctx: Context) -> CaldavStatus:
    """Stop syncing and forget the CalDAV login; your events stay in Fable."""
    await local.forget(ctx.session, ctx.user_id)
    await ctx.session.execute(delete(CaldavAccount).where(owned_by(CaldavAccount, ctx.caller)))
    return CaldavStatus(connected=False)
