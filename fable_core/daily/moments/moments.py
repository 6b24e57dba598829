"""Moments as tools: record, change, delete, and list or search, a user's own only.

A moment is its owner's alone: another user's is NotFound, as one that does not exist.
Listing is newest first, by day range (in the user's time zone) and tag, paged by position.
Searching (``query``) ranks by PostgreSQL full text (``ts_rank_cd`` on the text, then tags,
mood and place) and, while an embedding model answers, fuses that with the moments nearest in
meaning by reciprocal rank, as ``search_notes`` does (``mode`` says which); a moment is
embedded when recorded or its text changes (outside any transaction: a slow model holds no
connection; when the model is down it is found by words only).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import Moment
from fable_core.errors import InvalidInput, NotFound
from fable_core.knowledge.search import MIN_RELEVANCE, rrf
from fable_core.knowledge.types import Tag, Tags
from fable_core.knowledge.vectors import embedder_of
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import owned_by
from fable_core.tools.caller import Caller
from fable_core.tools.paging import Cursor, NewestFirst, decode_cursor, encode_cursor
from fable_core.tools.results import absent_when_none

__all__ = ["MomentPage", "MomentView", "moments_between"]

_PAGES = NewestFirst("moments", Moment.id, Moment.at)

MomentId = Annotated[int, Field(ge=1, le=2**31 - 1)]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=5000)]


def _at_most(n: int) -> Any:
    """A length limit checked, not published: the tool list (what agents pay for) stays short."""
    def check(value: str) -> str:
        if len(value) > n:
            raise ValueError(f"at most {n} characters")
        return value
    return AfterValidator(check)


Mood = Annotated[str, StringConstraints(strip_whitespace=True), _at_most(40)]
Place = Annotated[str, StringConstraints(strip_whitespace=True), _at_most(100)]
Query = Annotated[str, StringConstraints(strip_whitespace=True), _at_most(500)]
AHEAD = timedelta(days=1)  # how far in the future a moment's time may be (clocks and zones differ)
DEPTH = 200  # how many moments each ranking of a search reads


class MomentView(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    text: str
    at: datetime
    mood: str | None = absent_when_none()
    tags: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)
    location: str | None = absent_when_none()


class MomentPage(BaseModel):
    items: list[MomentView]
    mode: Literal["keyword", "hybrid"] | None = absent_when_none("How a query searched: hybrid adds meaning.")
    next_cursor: str | None = absent_when_none()


class Removed(BaseModel):
    id: int
    deleted: bool = True


@tool(group="journal", title="Record a moment", scope="write", transaction="phases",
      route=Route("POST", "/moments", 201))
async def record_moment(ctx: Context, text: Text | None = None, at: datetime | None = None, mood: Mood | None = None,
                        tags: Tags | None = None, location: Place | None = None, moment_id: MomentId | None = None,
                        ) -> MomentView:
    """Record a moment the user tells of (`at` default now); with moment_id, change one ("" clears)."""
    if moment_id is not None:
        return await _change(ctx, moment_id, text, at, mood, tags, location)
    if text is None:
        raise InvalidInput("a moment needs its text", field="text")
    when = await _when(ctx, at) if at is not None else datetime.now(UTC)
    vector, model = await _embedding(ctx, text)
    async with ctx.transaction() as session:
        moment = Moment(user_id=ctx.user_id, text=text, at=when, mood=mood or None, tags=tags or [],
                        location=location or None, embedding=vector, embedding_model=model)
        session.add(moment)
        await session.flush()
        return MomentView.model_validate(moment)


async def _change(ctx: Context, moment_id: int, text: str | None, at: datetime | None, mood: str | None,
                  tags: list[str] | None, location: str | None) -> MomentView:
    """Change what is given of moment ``moment_id``; ``""`` clears mood or location."""
    changes: dict[str, Any] = {k: v for k, v in {"text": text, "tags": tags}.items() if v is not None}
    changes |= {k: v or None for k, v in {"mood": mood, "location": location}.items() if v is not None}
    async with ctx.reading() as session:  # someone else's moment is not found, whatever else is wrong
        await _own(session, ctx.caller, moment_id, lock=False)
    if at is not None:
        changes["at"] = await _when(ctx, at)
    if not changes:
        raise InvalidInput("nothing to change: give text, at, mood, tags or location")
    if text is not None:
        changes["embedding"], changes["embedding_model"] = await _embedding(ctx, text)
    async with ctx.transaction() as session:
        moment = await _own(session, ctx.caller, moment_id)
        for key, value in changes.items():
            setattr(moment, key, value)
        await session.flush()
        return MomentView.model_validate(moment)


@tool(group="journal", title="Delete a moment", scope="write", destructive=True, idempotent=True,
      route=Route("DELETE", "/moments/{moment_id}"))
async def delete_moment(ctx: Context, moment_id: MomentId) -> Removed:
    """Delete a moment."""
    await ctx.session.delete(await _own(ctx.session, ctx.caller, moment_id))
    return Removed(id=moment_id)


@tool(group="journal", title="Moments", scope="read", transaction="phases", route=Route("GET", "/moments"))
async def list_moments(ctx: Context, query: Query = "", start: date | None = None, end: date | None = None,
                       tag: Tag | None = None, limit: Annotated[int, Field(ge=1, le=100)] = 20,
                       cursor: Cursor = None) -> MomentPage:
    """Newest first, or best matches of `query`; days start-end."""
    if start is not None and end is not None and end < start:
        raise InvalidInput(f"end {end} is before start {start}", field="end")
    zone = ZoneInfo(await ctx.timezone())
    where = _filters(start, end, tag, zone)
    if query:
        return await _search(ctx, query, where, limit, cursor)
    async with ctx.reading() as session:
        stmt = _PAGES.query(select(Moment).where(owned_by(Moment, ctx.caller), *where), cursor, limit)
        rows, next_cursor = _PAGES.page(list(await session.scalars(stmt)), limit)
        items = [MomentView.model_validate(m) for m in rows]
    return MomentPage(items=items, next_cursor=next_cursor)


async def moments_between(session: AsyncSession, caller: Caller, start: datetime, end: datetime,
                          limit: int) -> list[MomentView]:
    """The caller's moments in ``[start, end)``, oldest first (the newest ``limit``)."""
    rows = (await session.execute(select(Moment).where(owned_by(Moment, caller), Moment.at >= start, Moment.at < end)
                                  .order_by(Moment.at.desc(), Moment.id.desc()).limit(limit))).scalars()
    return [MomentView.model_validate(m) for m in reversed(list(rows))]


async def _when(ctx: Context, at: datetime) -> datetime:
    """``at`` as UTC: a time without a zone is the user's local time; the future is refused."""
    if at.tzinfo is None:
        at = at.replace(tzinfo=ZoneInfo(await ctx.timezone()))
    if at > datetime.now(UTC) + AHEAD:
        raise InvalidInput(f"at {at.isoformat()} is in the future: a moment is something that happened", field="at")
    return at.astimezone(UTC)


async def _embedding(ctx: Context, text: str) -> tuple[list[float] | None, str | None]:
    embedder = embedder_of(ctx)
    vector = await embedder.embed_document(text) if embedder is not None else None
    return (vector, embedder.model) if vector is not None and embedder is not None else (None, None)


async def _own(session: AsyncSession, caller: Caller, moment_id: int, *, lock: bool = True) -> Moment:
    stmt = select(Moment).where(Moment.id == moment_id, owned_by(Moment, caller))
    moment = await session.scalar(stmt.with_for_update() if lock else stmt)
    if moment is None:
        raise NotFound(f"moment {moment_id} not found", moment_id=moment_id)
    return moment


def _filters(start: date | None, end: date | None, tag: str | None, zone: ZoneInfo) -> list[Any]:
    where: list[Any] = []
    if start is not None:
        where.append(Moment.at >= datetime.combine(start, time(), zone))
    if end is not None:
        where.append(Moment.at < datetime.combine(end + timedelta(days=1), time(), zone))
    if tag is not None:
        where.append(Moment.tags.contains([tag]))
    return where



async def _search(ctx: Context, query: str, where: list[Any], limit: int, cursor: str | None) -> MomentPage:
    position = decode_cursor(cursor, "moment-search")
    offset = position[0] if position else 0
    if type(offset) is not int or offset < 0:
        raise InvalidInput("cursor is not valid for this listing; pass next_cursor from the same call unchanged",
                           field="cursor")
    embedder = embedder_of(ctx)
    vector = await embedder.embed_query(query) if embedder is not None else None
    tsq = func.websearch_to_tsquery("english", query)
    async with ctx.reading() as session:
        mine = [owned_by(Moment, ctx.caller), *where]
        keyword = list((await session.execute(
            select(Moment.id).where(*mine, Moment.search_vector.op("@@")(tsq))
            .order_by(func.ts_rank_cd(Moment.search_vector, tsq).desc(), Moment.id.desc()).limit(DEPTH))).scalars())
        ranked = keyword
        mode: Literal["keyword", "hybrid"] = "keyword"
        if vector is not None and embedder is not None:
            distance = Moment.embedding.cosine_distance(vector)
            near = (await session.execute(
                select(Moment.id, distance).where(*mine, Moment.embedding_model == embedder.model)
                .order_by(distance).limit(DEPTH))).all()
            floor = embedder.similarity_at(vector, MIN_RELEVANCE)
            semantic = [moment_id for moment_id, d in near if 1.0 - float(d) >= floor]
            ranked, mode = [moment_id for moment_id, _ in rrf([keyword, semantic])], "hybrid"
        page = ranked[offset: offset + limit]
        rows = {m.id: m for m in (await session.execute(select(Moment).where(Moment.id.in_(page)))).scalars()}
    items = [MomentView.model_validate(rows[i]) for i in page if i in rows]
    more = len(ranked) > offset + limit
    return MomentPage(items=items, mode=mode,
                      next_cursor=encode_cursor("moment-search", [offset + limit]) if more else None)
