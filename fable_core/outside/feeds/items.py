"""Feed items: listed (by feed, category, unread), marked read, saved as notes, and searched by
words and by meaning, as results the assistant can cite (title, link, feed, date, snippet).

Search is keyword search over each item's title and text (PostgreSQL full text,
``websearch_to_tsquery`` like notes); with an embedding model, the items nearest the query by
meaning are fused with it by reciprocal rank (``fable_core.knowledge.search.rrf``), the same
calibrated relevance cut as notes keeping unrelated items out. Item vectors are compared
exactly, without an index: a user keeps at most 100 items per feed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pgvector.sqlalchemy import Vector
from pydantic import Field, StringConstraints
from sqlalchemy import ColumnElement, Select, bindparam, cast, func, select, update

from fable_core.db.models import Feed, FeedItem, Note
from fable_core.errors import Conflict, InvalidInput, NotFound
from fable_core.knowledge.search import MIN_RELEVANCE, rrf
from fable_core.knowledge.types import MAX_BODY, MAX_TITLE
from fable_core.knowledge.vectors import embedder_of, query_vector
from fable_core.outside.feeds.subscriptions import own_feed
from fable_core.outside.feeds.views import (
    Category,
    FeedId,
    FeedItemsPage,
    FeedItemView,
    FeedSearchHit,
    FeedSearchResults,
    ItemId,
    MarkedRead,
    SavedItem,
)
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import owned_by
from fable_core.tools.caller import Caller
from fable_core.tools.paging import Cursor, NewestFirst

__all__: list[str] = []

_PAGES = NewestFirst("feed-items", FeedItem.id, FeedItem.published_at)

SNIPPET_CHARS = 240
_HEADLINE = "StartSel=**,StopSel=**,MaxWords=30,MinWords=10,MaxFragments=2,FragmentDelimiter= … "


def _filters(caller: Caller, feed_id: int | None, category: str | None) -> list[ColumnElement[bool]]:
    where: list[ColumnElement[bool]] = [owned_by(FeedItem, caller)]
    if feed_id is not None:
        where.append(FeedItem.feed_id == feed_id)
    if category is not None:
        where.append(FeedItem.feed_id.in_(select(Feed.id).where(owned_by(Feed, caller), Feed.category == category)))
    return where


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat[:SNIPPET_CHARS] + "…" if len(flat) > SNIPPET_CHARS else flat


@tool(group="feeds", title="List feed items", scope="read", route=Route("GET", "/feed-items"))
async def list_feed_items(
    ctx: Context,
    feed_id: FeedId | None = None,
    category: Category | None = None,
    unread: bool = False,
    full: bool = False,
    limit: Annotated[int, Field(ge=1, le=100)] = 20,
    cursor: Cursor = None,
) -> FeedItemsPage:
    """Items of your feeds, newest first, with a snippet of each.

    Args:
        full: Include each item's whole text.
    """
    if feed_id is not None:
        await own_feed(ctx.session, ctx.caller, feed_id)
    stmt = select(FeedItem, Feed.name).join(Feed, Feed.id == FeedItem.feed_id).where(
        *_filters(ctx.caller, feed_id, category))
    if unread:
        stmt = stmt.where(FeedItem.read_at.is_(None))
    rows, next_cursor = _PAGES.page((await ctx.session.execute(_PAGES.query(stmt, cursor, limit))).all(), limit,
                                    row=lambda r: r[0])
    return FeedItemsPage(items=[_item_view(item, name, full) for item, name in rows], next_cursor=next_cursor)



def _item_view(item: FeedItem, feed: str, full: bool) -> FeedItemView:
    return FeedItemView(id=item.id, feed_id=item.feed_id, feed=feed, title=item.title, link=item.link,
                        published=item.published_at, author=item.author, snippet=_snippet(item.content),
                        text=item.content if full else None, read=item.read_at is not None, note_id=item.note_id)


@tool(group="feeds", title="Mark feed items read", scope="write", idempotent=True,
      route=Route("POST", "/feed-items/read"))
async def mark_feed_items_read(
    ctx: Context,
    item_ids: Annotated[list[ItemId] | None, Field(max_length=500)] = None,
    feed_id: FeedId | None = None,
    read: bool = True,
) -> MarkedRead:
    """Mark items read (or unread with read=false): the ones given, or all of a feed's."""
    if not item_ids and feed_id is None:
        raise InvalidInput("give item_ids, or a feed_id to mark all its items", field="item_ids")
    if feed_id is not None:
        await own_feed(ctx.session, ctx.caller, feed_id)
    stmt = update(FeedItem).where(owned_by(FeedItem, ctx.caller),
                                  FeedItem.read_at.is_(None) if read else FeedItem.read_at.is_not(None))
    if item_ids:
        stmt = stmt.where(FeedItem.id.in_(item_ids))
    if feed_id is not None:
        stmt = stmt.where(FeedItem.feed_id == feed_id)
    changed = (await ctx.session.execute(
        stmt.values(read_at=datetime.now(UTC) if read else None).returning(FeedItem.id))).scalars().all()
    return MarkedRead(changed=len(changed))


@tool(group="feeds", title="Save a feed item as a note", scope="write", idempotent=True,
      route=Route("POST", "/feed-items/{item_id}/note"))
async def save_feed_item(ctx: Context, item_id: ItemId) -> SavedItem:
    """Save a feed item as a note with its text and a link to its source; saving it again returns that note."""
    row = (await ctx.session.execute(
        select(FeedItem, Feed.name).join(Feed, Feed.id == FeedItem.feed_id)
        .where(FeedItem.id == item_id, owned_by(FeedItem, ctx.caller)).with_for_update(of=FeedItem))).one_or_none()
    if row is None:
        raise NotFound(f"feed item {item_id} not found", item_id=item_id)
    item, feed = row
    if item.note_id is not None:
        title = await ctx.session.scalar(select(Note.title).where(Note.id == item.note_id))
        if title is not None:
            return SavedItem(item_id=item.id, note_id=item.note_id, title=title, created=False)
    note = await _create_note(ctx, item, feed)
    item.note_id, item.read_at = note.id, item.read_at or datetime.now(UTC)
    await ctx.session.flush()
    return SavedItem(item_id=item.id, note_id=note.id, title=note.title, created=True)


async def _create_note(ctx: Context, item: FeedItem, feed: str) -> Any:
    source = f"[{item.link}]({item.link})" if item.link else "(no link)"
    body = (f"{item.content}\n\n---\nSource: {source} — {feed}, "
            f"{item.published_at.date().isoformat()}")[:MAX_BODY]
    base = item.title[: MAX_TITLE - 120]
    titles = [base, f"{base} — {feed[:100]}", f"{base} — {feed[:100]} ({item.id})"]
    for i, title in enumerate(titles):
        try:
            return await ctx.call("create_note", {"title": title, "body": body, "tags": ["feed"], "confirm": True})
        except Conflict:
            if i == len(titles) - 1:
                raise
    raise AssertionError("unreachable")


@tool(group="feeds", title="Search feed items", scope="read", transaction="phases",
      route=Route("GET", "/feed-items/search"))
async def search_feed_items(
    ctx: Context,
    query: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=500)],
    feed_id: FeedId | None = None,
    category: Category | None = None,
    limit: Annotated[int, Field(ge=1, le=20)] = 8,
) -> FeedSearchResults:
    """Search your feeds' items by words (and by meaning with an embedding model); cite their links."""
    vector, missed = await query_vector(ctx, query)  # remote: before the session
    async with ctx.reading() as session:
        if feed_id is not None:
            await own_feed(session, ctx.caller, feed_id)
        where = _filters(ctx.caller, feed_id, category)
        tsq = func.websearch_to_tsquery("english", query)
        depth = max(limit, 50)
        keyword = list((await session.execute(
            select(FeedItem.id).where(*where, FeedItem.search_vector.op("@@")(tsq))
            .order_by(func.ts_rank_cd(FeedItem.search_vector, tsq).desc(), FeedItem.id.desc()).limit(depth)
        )).scalars())
        embedder = embedder_of(ctx)
        mode: Literal["keyword", "hybrid"] = "keyword"
        ranked = keyword[:limit]
        if vector is not None and embedder is not None:
            semantic = (await session.execute(_nearest(where, len(vector), depth), {
                "vector": vector, "model": embedder.model})).all()
            cut = embedder.similarity_at(vector, MIN_RELEVANCE)
            near = [item_id for item_id, distance in semantic if 1.0 - float(distance) >= cut]
            ranked, mode = [item_id for item_id, _ in rrf([keyword, near])][:limit], "hybrid"
        hits = await _hits(session, ranked, tsq)
    return FeedSearchResults(query=query, mode=mode, items=hits, keyword_only=missed)


def _nearest(where: list[ColumnElement[bool]], dims: int, limit: int) -> Select[Any]:
    distance = cast(FeedItem.embedding, Vector(dims)).cosine_distance(bindparam("vector", type_=Vector(dims)))
    return (select(FeedItem.id, distance).where(*where, FeedItem.dims == dims,
                                                FeedItem.embedding_model == bindparam("model"))
            .order_by(distance).limit(limit))


async def _hits(session: Any, ranked: list[int], tsq: Any) -> list[FeedSearchHit]:
    if not ranked:
        return []
    headline = func.ts_headline("english", func.left(FeedItem.content, 20_000), tsq, _HEADLINE)
    rows = {row[0].id: row for row in (await session.execute(
        select(FeedItem, Feed.name, headline).join(Feed, Feed.id == FeedItem.feed_id)
        .where(FeedItem.id.in_(ranked)))).all()}
    hits = []
    for item_id in ranked:
        item, feed, snippet = rows[item_id]
        hits.append(FeedSearchHit(id=item.id, title=item.title, link=item.link, feed=feed,
                                  published=item.published_at,
                                  snippet=snippet if snippet and "**" in snippet else _snippet(item.content)))
    return hits
