"""The CalDAV server at the wire: discovery, changes, PUT and DELETE, through the ``caldav`` library.

The library is synchronous (``niquests`` underneath), so every conversation with a server runs
in a worker thread of this module's own pool (:data:`WORKERS` threads), never on the event
loop and never in the loop's default executor (which DNS lookups and other capabilities use):
a dead or slow server occupies one worker for at most :data:`TIMEOUT` seconds a request and
:data:`DEADLINE` seconds in all, and never stalls another user's sync or a request. Past
:data:`DEADLINE` the caller gets :class:`~fable_core.errors.Unavailable` (the thread finishes
its current request in the background and is dropped).

**The SSRF guard.** The server's URL is the user's, so before each conversation its host is
resolved and every address must be public (:func:`fable_core.infra.ssrf.resolve_public`), unless the
operator lets that ``host:port`` through (``FABLE_CALDAV_ALLOW_HOSTS``). The HTTP session is
then *pinned* to the checked address (an in-memory resolver: DNS cannot answer differently for
the connection), redirects are not followed, and RFC 6764 discovery (DNS SRV records naming
other hosts) is off: the URL given is the URL spoken to.

Errors a user can act on are translated once, here: a refused login is :class:`WrongLogin`
(an :class:`~fable_core.errors.InvalidInput`), a server that cannot be reached or answers
nonsense is ``Unavailable``; an ``If-Match`` that no longer holds is :class:`Stale`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, unquote, urlsplit

from fable_core.errors import InvalidInput, Unavailable
from fable_core.infra import ssrf

if TYPE_CHECKING:
    import niquests
    from caldav.davclient import DAVClient
    from caldav.elements import dav
    from caldav.lib import error as dav_error

__all__ = ["DEADLINE", "TIMEOUT", "WORKERS", "Changes", "RemoteCalendar", "RemoteObject", "Server", "Stale",
           "WrongLogin", "calendars", "changes", "delete", "fetch", "put", "run"]

TIMEOUT = 10  # seconds, each HTTP request
DEADLINE = 60.0  # seconds, one whole conversation (a sync, a discovery)
WORKERS = 8
MULTIGET_BATCH = 200
T = TypeVar("T")
Client = Any  # a caldav.DAVClient: half its methods are untyped or typed as sync-or-async
Cal = Any  # a caldav.Calendar, likewise
_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="fable-caldav")


class WrongLogin(InvalidInput):
    """Raised when the CalDAV server refuses the username or password (HTTP 401/403)."""

    type = "caldav_login_refused"


class Stale(Exception):
    """An ``If-Match`` / ``If-None-Match`` precondition failed: the object changed on the server."""


@dataclass(frozen=True, slots=True)
class Server:
    """Where and as whom: the URL the user gave, their login, and the operator's exempt hosts."""

    url: str
    username: str
    password: str = field(repr=False)
    allow: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RemoteCalendar:
    href: str
    name: str


@dataclass(frozen=True, slots=True)
class RemoteObject:
    href: str
    etag: str
    ical: str


@dataclass(slots=True)
class Changes:
    """What changed on the server since ``sync_token`` (or everything, when ``full``)."""

    token: str | None
    changed: list[RemoteObject]
    deleted: set[str]
    full: bool


def href_of(url: object) -> str:
    """The path part of a server URL, unquoted: how hrefs are stored and compared."""
    return unquote(urlsplit(str(url)).path)


async def run(server: Server, work: Callable[[Client], T]) -> T:
    """Run ``work(client)`` in a worker thread against ``server``, the URL checked first."""
    parts = urlsplit(server.url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(f"the CalDAV URL must be an http or https URL, not {server.url[:100]!r}", field="url")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as e:
        raise InvalidInput(f"the CalDAV URL {server.url[:100]!r} has a bad port", field="url") from e
    host = parts.hostname
    pin = None if f"{host}:{port}" in server.allow else str(await _public_address(host, port))
    # queued while every worker is busy: the deadline counts the wait, and a call given up on
    # before a worker took it is never run
    future = asyncio.get_running_loop().run_in_executor(_POOL, _converse, server, pin, work)
    try:
        return await asyncio.wait_for(future, DEADLINE)
    except TimeoutError as e:
        raise Unavailable(f"the CalDAV server at {server.url[:100]!r} took longer than {DEADLINE:g} s",
                          url=server.url[:200]) from e


async def _public_address(host: str, port: int) -> ssrf.IP:
    try:
        return await ssrf.resolve_public(host, port)
    except ssrf.Blocked as e:
        refused = ssrf.allowed_by(e, f"{host}:{port}", "FABLE_CALDAV_ALLOW_HOSTS")
        raise InvalidInput(f"the CalDAV URL cannot be used: {refused.message}", field="url") from e
    except InvalidInput as e:  # cannot resolve: the server is unreachable (now)
        raise Unavailable(f"cannot reach the CalDAV server: {e.message}", host=host) from e


def _library() -> None:
    """caldav and niquests, imported by the first conversation with a server (every function
    that uses them runs inside one): at module level they were 80 ms of every start."""
    global niquests, DAVClient, dav, dav_error  # noqa: PLW0603
    import niquests
    from caldav.davclient import DAVClient
    from caldav.elements import dav
    from caldav.lib import error as dav_error


def _converse(server: Server, pin: str | None, work: Callable[[Client], T]) -> T:
    _library()
    client = DAVClient(url=server.url, username=server.username, password=server.password,
                              timeout=TIMEOUT, enable_rfc6764=False, rate_limit_handle=False)
    host = urlsplit(server.url).hostname
    if pin is not None:
        client.session.close()
        address = f"[{pin}]" if ":" in pin else pin
        client.session = niquests.Session(resolver=f"in-memory://default/?hosts={host}:{address}")
    client.session.max_redirects = 0
    try:
        return work(client)
    except dav_error.AuthorizationError as e:
        raise WrongLogin("the CalDAV server refused this username and password", url=server.url[:200]) from e
    except niquests.exceptions.TooManyRedirects as e:
        raise InvalidInput(f"{server.url[:100]!r} redirects elsewhere; give the CalDAV URL it leads to",
                           field="url") from e
    except (niquests.exceptions.RequestException, OSError) as e:
        raise Unavailable(f"cannot reach the CalDAV server at {server.url[:100]!r}: {_reason(e)}",
                          url=server.url[:200]) from e
    except dav_error.DAVError as e:
        raise Unavailable(f"the CalDAV server at {server.url[:100]!r} answered an error: {_reason(e)}",
                          url=server.url[:200]) from e
    except ValueError as e:  # what it answered makes no sense here (an href on another host, say)
        raise Unavailable(f"the CalDAV server at {server.url[:100]!r} answered what Fable cannot use: "
                          f"{_reason(e)}", url=server.url[:200]) from e
    finally:
        client.close()


def _reason(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text[:200]


# --- the operations (each runs in a worker thread, inside :func:`run`) ---------------------------


def calendars(client: Client) -> list[RemoteCalendar]:
    """The calendars of the login's principal that hold events."""
    found = []
    for calendar in client.principal().calendars():
        name = calendar.get_display_name() or href_of(calendar.url).rstrip("/").rsplit("/", 1)[-1]
        found.append(RemoteCalendar(href=href_of(calendar.url), name=str(name)))
    return sorted(found, key=lambda c: (c.name.lower(), c.href))


def _calendar(client: Client, href: str) -> Cal:
    return client.calendar(url=client.url.join(quote(href)))


def changes(client: Client, calendar: str, token: str | None, known: dict[str, str]) -> Changes:
    """What changed in ``calendar`` since ``token``; ``known`` maps each href Fable holds to its
    etag. A sync-collection REPORT (RFC 6578) with the token; a token the server no longer knows,
    or none, lists everything with a fresh token; a server without sync-collection is listed
    by etag (PROPFIND). Listing everything, what Fable knows and the server lacks was deleted."""
    cal = _calendar(client, calendar)
    listed: dict[str, str] | None = None
    deleted: set[str] = set()
    new_token: str | None = None
    full = token is None
    for attempt in ([token] if token is None else [token, None]):
        try:
            result = cal.get_objects_by_sync_token(sync_token=attempt, load_objects=False, disable_fallback=True)
        except dav_error.DAVError as e:
            # a 403 that is an expired token (DAV:valid-sync-token) or no sync-collection is not a login problem
            if cal._is_genuine_authorization_error(e):  # the library judges its own 403s
                raise
            continue
        removed = {href_of(u) for u in result.deleted_urls}
        listed = {href_of(o.url): str(o.props.get(dav.GetEtag.tag) or "") for o in result
                  if href_of(o.url) not in removed and href_of(o.url).endswith(".ics")}
        deleted, new_token, full = removed, str(result.sync_token), attempt is None
        break
    if listed is None:  # no sync-collection: compare etags
        listed, full = _etags(cal), True
    if full:
        deleted = set(known) - set(listed)
    stale = [href for href, etag in listed.items() if not etag or known.get(href) != etag]
    return Changes(token=new_token, changed=_multiget(cal, stale), deleted=deleted, full=full)


def _etags(cal: Cal) -> dict[str, str]:
    response = cal._query_properties([dav.GetEtag()], depth=1)
    own = href_of(cal.url).rstrip("/")
    return {href_of(href): str(props.get(dav.GetEtag.tag) or "")
            for href, props in response.expand_simple_props([dav.GetEtag()]).items()
            if href_of(href).rstrip("/") != own}


def _multiget(cal: Cal, hrefs: Iterable[str]) -> list[RemoteObject]:
    wanted = list(hrefs)
    found: list[RemoteObject] = []
    for start in range(0, len(wanted), MULTIGET_BATCH):
        urls = [cal.url.join(quote(h)) for h in wanted[start:start + MULTIGET_BATCH]]
        for obj in cal.multiget(urls):
            data = obj.data
            if data:
                found.append(RemoteObject(href_of(obj.url), str((obj.props or {}).get(dav.GetEtag.tag) or ""), data))
    return found


def fetch(client: Client, calendar: str, href: str) -> RemoteObject | None:
    """One object as it is now on the server, or None if it is gone."""
    found = _multiget(_calendar(client, calendar), [href])
    return found[0] if found else None


def put(client: Client, calendar: str, href: str | None, uid: str, ical: str,
        etag: str | None) -> tuple[str, str]:
    """Store ``ical`` at ``href`` (new: ``<calendar>/<uid>.ics``, only if nothing is there) if it
    still has ``etag``; its href and new etag. :class:`Stale` when the precondition fails."""
    target = href or calendar.rstrip("/") + "/" + _safe_name(uid) + ".ics"
    headers = {"Content-Type": "text/calendar; charset=utf-8"}
    if href is None or not etag:
        headers["If-None-Match"] = "*"
    else:
        headers["If-Match"] = etag
    response = client.put(str(client.url.join(quote(target))), ical, headers)
    _check(response, target)
    new_etag = response.headers.get("ETag") or _etag_of(client, target)
    return target, new_etag


def _safe_name(uid: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.@" else "_" for c in uid)[:200] or "event"


def _etag_of(client: Client, href: str) -> str:
    response = client.propfind(str(client.url.join(quote(href))), _GETETAG, depth=0)
    for props in response.expand_simple_props([dav.GetEtag()]).values():
        return str(props.get(dav.GetEtag.tag) or "")
    return ""


_GETETAG = ('<?xml version="1.0" encoding="utf-8"?><propfind xmlns="DAV:"><prop><getetag/></prop></propfind>')


def delete(client: Client, href: str, etag: str | None) -> None:
    """DELETE ``href`` if it still has ``etag``; gone already is fine. :class:`Stale` otherwise."""
    response = client.delete(str(client.url.join(quote(href))), {"If-Match": etag} if etag else {})
    if response.status == 404:
        return
    _check(response, href)


def _check(response: Any, href: str) -> None:
    if response.status == 412:
        raise Stale(href)
    if response.status >= 400:
        raise dav_error.DAVError(f"{response.status} for {href}")


def exempt(allow: Container[str], url: str) -> bool:
    """Whether the operator lets ``url``'s host:port through the address check."""
    parts = urlsplit(url)
    try:
        return f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}" in allow
    except ValueError:
        return False
