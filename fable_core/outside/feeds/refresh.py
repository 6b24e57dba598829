"""Refreshing feeds: on a schedule (the ``refresh_due_feeds`` job, every minute, refreshes the
feeds whose next fetch is due) and on demand (``refresh_feeds``).

One refresh of a feed, holding no database connection while it waits on the network:

1. **Fetch** it through the SSRF guard with the validators of its last answer
   (``If-None-Match``, ``If-Modified-Since``), within ``FABLE_FEED_TIMEOUT`` seconds and
   :data:`MAX_BYTES`. A ``304 Not Modified`` ends it there: nothing is parsed or stored.
2. **Parse** the answer in a worker thread (:mod:`.parsing`).
3. **Store**, in one transaction: the entries not yet stored (one row per feed and ``guid``,
   ``INSERT ... ON CONFLICT DO NOTHING``: a refresh never duplicates an item), the feed pruned
   to its newest :data:`~fable_core.outside.feeds.parsing.MAX_ITEMS` items, the new validators and the
   next fetch's time. The new items are handed to the embedding worker, when there is one.

A failure (the feed unreachable, slow, refusing, not a feed any more, an address the guard
refuses) changes no item: it is recorded on the feed (``last_error``, ``failures``) and its
next attempt backs off, from a minute doubling up to a day. Feeds are fetched
``FABLE_FEED_CONCURRENCY`` at a time, each bounded in time, so one slow or dead feed costs only
its own slot.

Two refreshes of one feed at once (a replica's job and a user's button) are harmless: items
are unique per feed and guid, and the last to finish writes the validators.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal

from sqlalchemy import delete, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.assistant.parts import ASSISTANT
from fable_core.db.models import Feed, FeedItem
from fable_core.errors import FableError, Unavailable
from fable_core.infra import ssrf
from fable_core.outside.feeds.parsing import MAX_ITEMS, Entry, NotAFeed, Parsed, parse
from fable_core.tools.jobs import job

if TYPE_CHECKING:
    from fable_core.config import Settings
    from fable_core.tools.runtime import Runtime

__all__ = ["ACCEPT", "MAX_BACKOFF", "MAX_BYTES", "Answer", "FeedRef", "Outcome", "backoff", "embed_later", "fetch_feed",
           "refresh", "refresh_due", "store_entries"]

MAX_BYTES = 5_000_000
MAX_BACKOFF = timedelta(days=1)
ACCEPT = "application/rss+xml, application/atom+xml, application/xml;q=0.9, text/xml;q=0.9, */*;q=0.5"
USER_AGENT = "Fable feed reader"
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FeedRef:
    """What a refresh needs of a feed, read before it fetches."""

    id: int
    user_id: int
    url: str
    etag: str | None = None
    last_modified: str | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    feed_id: int
    status: Literal["updated", "unchanged", "failed"]
    new: int = 0
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    """A fetched feed, parsed, with the validators to send next time."""

    parsed: Parsed | None  # None: not modified
    etag: str | None
    last_modified: str | None


def backoff(failures: int) -> timedelta:
    """How long after the ``failures``-th failure in a row the next attempt waits: a minute,
    doubling, at most :data:`MAX_BACKOFF`."""
    wait: timedelta = timedelta(minutes=1) * 2 ** max(0, min(failures - 1, 12))
    return min(wait, MAX_BACKOFF)


async def fetch_feed(settings: Settings, url: str, etag: str | None = None,
                     last_modified: str | None = None) -> Answer:
    """Fetch and parse the feed at ``url`` (conditionally, with validators given). NotAFeed,
    Blocked or Unavailable when it cannot be read."""
    headers = {"Accept": ACCEPT, "User-Agent": USER_AGENT}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    fetched = await ssrf.fetch(url, allow=settings.fable_fetch_allow_hosts, max_bytes=MAX_BYTES,
                               timeout=settings.fable_feed_timeout, headers=headers)
    validators = (fetched.headers.get("etag"), fetched.headers.get("last-modified"))
    if fetched.status == 304:
        return Answer(None, *validators)
    if fetched.status != 200:
        raise Unavailable(f"the feed at {url[:200]!r} answered HTTP {fetched.status}", url=url[:200],
                          status=fetched.status)
    if fetched.truncated:
        raise NotAFeed(f"the feed at {url[:200]!r} is larger than {MAX_BYTES // 1_000_000} MB", url=url[:200])
    return Answer(await parse(fetched.content, fetched.url, fetched.content_type), *validators)


async def refresh(fable: Runtime, feeds: Sequence[FeedRef]) -> list[Outcome]:
    """Refresh ``feeds``, ``FABLE_FEED_CONCURRENCY`` at a time; one outcome each, in order.
    A feed's failure is recorded on it and in its outcome, never raised."""
    slots = asyncio.Semaphore(fable.settings.fable_feed_concurrency)

    async def one(feed: FeedRef) -> Outcome:
        async with slots:
            return await _refresh_one(fable, feed)

    return list(await asyncio.gather(*(one(f) for f in feeds)))


async def _refresh_one(fable: Runtime, feed: FeedRef) -> Outcome:
    try:
        answer = await fetch_feed(fable.settings, feed.url, feed.etag, feed.last_modified)
    except FableError as e:
        await _failed(fable, feed, e.message)
        return Outcome(feed.id, "failed", error=e.message)
    new = await _store(fable, feed, answer)
    embed_later(fable, new)
    return Outcome(feed.id, "updated" if answer.parsed is not None else "unchanged", new=len(new))


async def _failed(fable: Runtime, feed: FeedRef, error: str) -> None:
    now = datetime.now(UTC)
    async with fable.db.transaction() as session:
        failures = await session.scalar(
            update(Feed).where(Feed.id == feed.id)
            .values(failures=Feed.failures + 1, last_error=error[:1000], last_attempt_at=now)
            .returning(Feed.failures))
        if failures is not None:
            await session.execute(update(Feed).where(Feed.id == feed.id)
                                  .values(next_fetch_at=now + backoff(failures)))


async def _store(fable: Runtime, feed: FeedRef, answer: Answer) -> list[int]:
    """Record a successful fetch; the ids of the items it added."""
    now = datetime.now(UTC)
    values: dict[str, object] = {
        "last_success_at": now, "last_attempt_at": now, "last_error": None, "failures": 0,
        "next_fetch_at": now + timedelta(seconds=fable.settings.fable_feed_refresh_interval)}
    if answer.etag is not None or answer.parsed is not None:
        values["etag"] = answer.etag
    if answer.last_modified is not None or answer.parsed is not None:
        values["last_modified"] = answer.last_modified
    async with fable.db.transaction() as session:
        if answer.parsed is None:
            await session.execute(update(Feed).where(Feed.id == feed.id).values(**values))
            return []
        if answer.parsed.site_url:
            values["site_url"] = answer.parsed.site_url
        found = await session.scalar(update(Feed).where(Feed.id == feed.id).values(**values).returning(Feed.id))
        if found is None:  # unsubscribed meanwhile
            return []
        return await store_entries(session, feed, answer.parsed.entries, now)


async def store_entries(session: AsyncSession, feed: FeedRef, entries: Sequence[Entry], now: datetime) -> list[int]:
    """Add the entries this feed does not have yet and prune it to its newest items; the ids
    of the added items that remain."""
    if not entries:
        return []
    rows = [{"feed_id": feed.id, "user_id": feed.user_id, "guid": e.guid, "link": e.link, "title": e.title,
             "content": e.content, "author": e.author,
             # undated entries keep the feed's order; none is dated in the future (it would stay on top)
             "published_at": min(e.published, now) if e.published else now - timedelta(microseconds=i)}
            for i, e in enumerate(entries)]
    added = list((await session.execute(
        insert(FeedItem).values(rows).on_conflict_do_nothing(constraint="uq_feed_items_feed_guid")
        .returning(FeedItem.id))).scalars())
    if not added:
        return []
    newest = (select(FeedItem.id).where(FeedItem.feed_id == feed.id)
              .order_by(FeedItem.published_at.desc(), FeedItem.id.desc()).limit(MAX_ITEMS))
    pruned = set((await session.execute(
        delete(FeedItem).where(FeedItem.feed_id == feed.id, FeedItem.id.not_in(newest.scalar_subquery()))
        .returning(FeedItem.id))).scalars())
    return [i for i in added if i not in pruned]


async def refresh_due(fable: Runtime, limit: int = 1000) -> int:
    """Refresh the feeds whose next fetch is due, oldest due first; how many were tried."""
    async with fable.db.reading() as session:
        due = [FeedRef(*row) for row in (await session.execute(
            select(Feed.id, Feed.user_id, Feed.url, Feed.etag, Feed.last_modified)
            .where(Feed.next_fetch_at <= datetime.now(UTC)).order_by(Feed.next_fetch_at).limit(limit))).all()]
    outcomes = await refresh(fable, due)
    failed = sum(o.status == "failed" for o in outcomes)
    if failed:
        _log.info("feeds: %d of %d refreshes failed", failed, len(due))
    return len(due)


@job(every=60)
async def refresh_due_feeds(fable: Runtime) -> None:
    """Refresh every feed whose next fetch is due (``FABLE_FEED_REFRESH_INTERVAL`` after its last)."""
    await refresh_due(fable)


def embed_later(fable: Runtime, item_ids: Sequence[int]) -> None:
    """Hand committed new items to the embedding worker, when this Fable has one."""
    worker = assistant.worker if (assistant := fable.part(ASSISTANT)) is not None else None
    if worker is not None and item_ids:
        worker.enqueue_feed_items(item_ids)
