"""Subscribing to feeds, per user: subscribe (the feed read once before anything is stored),
list by category, rename or recategorise, unsubscribe, and refresh now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

from pydantic import Field, StringConstraints
from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import Feed, FeedItem
from fable_core.errors import Conflict, InvalidInput, NotFound, Unavailable
from fable_core.infra import ssrf
from fable_core.outside.feeds.refresh import FeedRef, embed_later, fetch_feed, refresh, store_entries
from fable_core.outside.feeds.views import (
    Category,
    FeedId,
    FeedInfo,
    FeedList,
    FeedName,
    RefreshedFeed,
    RefreshResult,
)
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import owned_by
from fable_core.tools.caller import Caller
from fable_core.tools.paging import Cursor, decode_offset, encode_cursor
from fable_core.tools.results import Deleted

__all__ = ["own_feed"]

FeedUrl = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)]


async def own_feed(session: AsyncSession, caller: Caller, feed_id: int) -> Feed:
    feed = await session.scalar(select(Feed).where(Feed.id == feed_id, owned_by(Feed, caller)))
    if feed is None:
        raise NotFound(f"feed {feed_id} not found", feed_id=feed_id)
    return feed


@tool(group="feeds", title="Subscribe to a feed", scope="write", transaction="phases", open_world=True, confirm=True,
      route=Route("POST", "/feeds", status=201))
async def subscribe_feed(ctx: Context, url: FeedUrl, name: FeedName | None = None, category: Category = "") -> FeedInfo:
    """Subscribe to an RSS or Atom feed; it is read once first, and a page that is not a feed is refused.

    Args:
        name: Default: the feed's title.
    """
    ssrf.check_url(url, ctx.settings.fable_fetch_allow_hosts)
    async with ctx.reading() as session:
        await _refuse_taken(session, ctx.caller, url)
    answer = await fetch_feed(ctx.settings, url)  # remote: no connection held
    if answer.parsed is None:
        raise Unavailable(f"the feed at {url[:200]!r} answered 304 Not Modified to a first request", url=url[:200])
    now = datetime.now(UTC)
    async with ctx.transaction() as session:
        feed = await session.scalar(insert(Feed).values(
            user_id=ctx.user_id, url=url, name=name or answer.parsed.title or url[:200], category=category,
            site_url=answer.parsed.site_url, etag=answer.etag, last_modified=answer.last_modified,
            last_success_at=now, last_attempt_at=now,
            next_fetch_at=now + timedelta(seconds=ctx.settings.fable_feed_refresh_interval),
        ).on_conflict_do_nothing(constraint="uq_feeds_user_url").returning(Feed))
        if feed is None:
            await _refuse_taken(session, ctx.caller, url)
        assert feed is not None
        added = await store_entries(session, FeedRef(feed.id, feed.user_id, feed.url), answer.parsed.entries, now)
        info = await _info(session, feed)
    embed_later(ctx.fable, added)
    return info


async def _refuse_taken(session: AsyncSession, caller: Caller, url: str) -> None:
    taken = await session.scalar(select(Feed.id).where(owned_by(Feed, caller), Feed.url == url))
    if taken is not None:
        raise Conflict(f"you already subscribe to {url[:200]!r} (feed {taken})", feed_id=taken)


@tool(group="feeds", title="List feeds", scope="read", route=Route("GET", "/feeds"))
async def list_feeds(ctx: Context, category: Category | None = None,
                     limit: Annotated[int, Field(ge=1, le=500)] = 200, cursor: Cursor = None) -> FeedList:
    """Your feeds by category and name, with their item and unread counts and refresh errors."""
    offset = decode_offset(cursor, "feeds")
    counts = (select(FeedItem.feed_id, func.count().label("items"),
                     func.count().filter(FeedItem.read_at.is_(None)).label("unread"))
              .where(owned_by(FeedItem, ctx.caller)).group_by(FeedItem.feed_id).subquery())
    stmt = (select(Feed, func.coalesce(counts.c["items"], 0), func.coalesce(counts.c.unread, 0))
            .outerjoin(counts, counts.c.feed_id == Feed.id).where(owned_by(Feed, ctx.caller)))
    if category is not None:
        stmt = stmt.where(Feed.category == category)
    rows = (await ctx.session.execute(stmt.order_by(Feed.category, func.lower(Feed.name), Feed.id)
                                      .offset(offset).limit(limit + 1))).all()
    more = encode_cursor("feeds", [offset + limit]) if len(rows) > limit else None
    return FeedList(feeds=[_view(feed, items, unread) for feed, items, unread in rows[:limit]], next_cursor=more)



async def _info(session: AsyncSession, feed: Feed) -> FeedInfo:
    items, unread = (await session.execute(
        select(func.count(), func.count().filter(FeedItem.read_at.is_(None))).where(FeedItem.feed_id == feed.id)
    )).one()
    return _view(feed, items, unread)


def _view(feed: Feed, items: int, unread: int) -> FeedInfo:
    return FeedInfo(id=feed.id, name=feed.name, url=feed.url, category=feed.category, site_url=feed.site_url,
                    items=items, unread=unread, last_success_at=feed.last_success_at, last_error=feed.last_error,
                    next_fetch_at=feed.next_fetch_at)


@tool(group="feeds", title="Change a feed", scope="write", idempotent=True, route=Route("PATCH", "/feeds/{feed_id}"))
async def update_feed(ctx: Context, feed_id: FeedId, name: FeedName | None = None,
                      category: Category | None = None) -> FeedInfo:
    """Rename a feed or change its category ("" for none)."""
    if name is None and category is None:
        raise InvalidInput("give a name or a category to change", field="name")
    feed = await own_feed(ctx.session, ctx.caller, feed_id)
    if name is not None:
        feed.name = name
    if category is not None:
        feed.category = category
    await ctx.session.flush()
    return await _info(ctx.session, feed)


@tool(group="feeds", title="Unsubscribe from a feed", scope="write", destructive=True, idempotent=True,
      route=Route("DELETE", "/feeds/{feed_id}"))
async def unsubscribe_feed(ctx: Context, feed_id: FeedId) -> Deleted:
    """Unsubscribe from a feed and delete its items (notes saved from them stay)."""
    deleted = await ctx.session.scalar(delete(Feed).where(Feed.id == feed_id, owned_by(Feed, ctx.caller))
                                       .returning(Feed.id))
    if deleted is None:
        raise NotFound(f"feed {feed_id} not found", feed_id=feed_id)
    return Deleted(id=feed_id)


@tool(group="feeds", title="Refresh feeds", scope="write", idempotent=True, transaction="phases", open_world=True,
      route=Route("POST", "/feeds/refresh"))
async def refresh_feeds(ctx: Context, feed_id: FeedId | None = None) -> RefreshResult:
    """Fetch your feeds (or one) now."""
    async with ctx.reading() as session:
        stmt = select(Feed.id, Feed.user_id, Feed.url, Feed.etag, Feed.last_modified, Feed.name).where(
            owned_by(Feed, ctx.caller))
        if feed_id is not None:
            stmt = stmt.where(Feed.id == feed_id)
        rows = (await session.execute(stmt.order_by(Feed.id))).all()
    if feed_id is not None and not rows:
        raise NotFound(f"feed {feed_id} not found", feed_id=feed_id)
    outcomes = await refresh(ctx.fable, [FeedRef(*row[:5]) for row in rows])
    return RefreshResult(new_items=sum(o.new for o in outcomes), feeds=[
        RefreshedFeed(id=o.feed_id, name=row.name, status=o.status, new=o.new, error=o.error)
        for o, row in zip(outcomes, rows, strict=True)])
