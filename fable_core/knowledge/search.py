"""Searching notes and tasks: by words, by meaning when an embedding model is there, and by
near-miss title when no word matches.

Every way of finding ranks note ids; one query then turns a ranked page into hits with their
highlighted snippets, so a hit reads the same however it was found:

- **keyword**: PostgreSQL full text (``websearch_to_tsquery``: "quoted phrases", OR,
  -excluded), ranked by ``ts_rank_cd`` (titles weigh more than bodies);
- **hybrid**: the keyword ranking and the nearest notes by embedding fused by reciprocal rank,
  ``sum(1 / (60 + rank))``, so a note high in either list rises and one high in both rises
  most, without comparing incomparable scores; neighbours less than :data:`MIN_RELEVANCE`
  spreads above what the query scores against unrelated text are left out (every note is
  *some* distance away; the cut is calibrated per model, ``fable_core.assistant.calibration``);
- **typos**: when no word matches, the titles most alike (trigrams) are returned instead.

Without an embedder, or while it is down, search is keyword-only and says ``mode="keyword"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints
from sqlalchemy import Float, Integer, and_, column, func, select, values
from sqlalchemy.sql import FromClause, Subquery

from fable_core.db.models import Note, title_key
from fable_core.knowledge.filters import check_refs, note_filters
from fable_core.knowledge.paging import decode_cursor, encode_cursor
from fable_core.knowledge.types import Cursor, Kind, RowId, Tag
from fable_core.knowledge.vectors import embedder_of, nearest, query_vector
from fable_core.knowledge.views import NoteSummary, SearchHit, SearchResults
from fable_core.tools import Context, Route, tool

__all__ = ["MIN_RELEVANCE", "RRF_K", "rrf"]

RRF_K = 60
MIN_RELEVANCE = 1.5
SNIPPET_CHARS = 160
_HEADLINE = "StartSel=**,StopSel=**,MaxWords=24,MinWords=8,MaxFragments=2,FragmentDelimiter= … "


@tool(title="Search notes", scope="read", transaction="phases", route=Route("GET", "/search"))
async def search_notes(
    ctx: Context,
    query: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=500)],
    tag: Tag | None = None,
    kind: Kind = "all",
    project_id: RowId | None = None,
    limit: Annotated[int, Field(ge=1, le=50)] = 10,
    cursor: Cursor = None,
) -> SearchResults:
    """Search notes and tasks by words, best matches first, with highlighted snippets.

    Supports "quoted phrases", OR and -excluded words. Titles weigh more than bodies; when no
    word matches, near-miss titles (typos) are returned instead. With an embedding model, notes
    close in meaning are found too (`mode` "hybrid"; "keyword" when words alone were used).
    """
    position = decode_cursor(cursor, "search")
    offset = int(position[0]) if position else 0
    vector = await query_vector(ctx, query)  # remote: before the session
    async with ctx.reading():
        await check_refs(ctx, project_id=project_id)
        where = note_filters(ctx, tag=tag, kind=kind, status=None, priority=None, project_id=project_id,
                             milestone_id=None, parent_id=None, due_before=None, due_after=None)
        tsq = func.websearch_to_tsquery("english", query)
        if vector is not None:
            fused = await _hybrid(ctx, tsq, vector, where, depth=max(offset + limit + 1, 50))
            if fused:
                page = fused[offset: offset + limit + 1]
                hits = await _hits(ctx, _listed(page[:limit]), tsq)
                return _results(query, "hybrid", hits, offset, limit, more=len(page) > limit)
        hits = await _hits(ctx, _keyword(tsq, where, offset, limit + 1), tsq)
        if not hits and offset == 0:
            hits = await _hits(ctx, _near_titles(query, where, limit), tsq)
        return _results(query, "keyword", hits[:limit], offset, limit, more=len(hits) > limit)


def _results(query: str, mode: Literal["keyword", "hybrid"], hits: list[SearchHit], offset: int, limit: int, *,
             more: bool) -> SearchResults:
    return SearchResults(query=query, mode=mode, items=hits,
                         next_cursor=encode_cursor("search", [offset + limit]) if more else None)


def rrf(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[tuple[int, float]]:
    """Fuse rankings of ids; best first, ties broken by the higher id (newer first)."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], -kv[0]))


def _keyword(tsq: Any, where: list[Any], offset: int, limit: int) -> Subquery:
    rank = func.ts_rank_cd(Note.search_vector, tsq, 1)
    return (select(Note.id.label("id"), rank.label("score"))
            .where(and_(*where), Note.search_vector.op("@@")(tsq))
            .order_by(rank.desc(), Note.id.desc()).offset(offset).limit(limit).subquery())


def _near_titles(query: str, where: list[Any], limit: int) -> Subquery | None:
    key = title_key(query)
    if len(key) < 3:
        return None
    return (select(Note.id.label("id"), func.similarity(Note.title_key, key).label("score"))
            .where(and_(*where), Note.title_key.op("%")(key))
            .order_by(Note.title_key.op("<->")(key), Note.id.desc()).limit(limit).subquery())


async def _hybrid(ctx: Context, tsq: Any, vector: list[float], where: list[Any], *,
                  depth: int) -> list[tuple[int, float]]:
    embedder = embedder_of(ctx)
    assert embedder is not None
    keyword = list((await ctx.session.execute(select(_keyword(tsq, where, 0, depth).c.id))).scalars())
    semantic = await nearest(ctx.session, ctx.caller, vector, embedder.model, limit=depth,
                             where=where, min_similarity=embedder.similarity_at(vector, MIN_RELEVANCE))
    return rrf([keyword, [note_id for note_id, _ in semantic]])


def _listed(page: list[tuple[int, float]]) -> FromClause | None:
    """A ranked page computed in Python, as rows the hits query can join."""
    if not page:
        return None
    return values(column("id", Integer), column("score", Float), name="ranked").data(page).alias("ranked")


async def _hits(ctx: Context, ranked: FromClause | None, tsq: Any) -> list[SearchHit]:
    """The notes of a ranked page (``id``, ``score``), best first, each with its snippet: the
    query's words highlighted where they occur, else the start of the body."""
    if ranked is None:
        return []
    headline = func.ts_headline("english", func.left(Note.body, 20_000), tsq, _HEADLINE)
    rows = (await ctx.session.execute(
        select(Note, ranked.c.score, headline)
        .join(ranked, ranked.c.id == Note.id)
        .order_by(ranked.c.score.desc(), Note.id.desc())
    )).all()
    return [SearchHit(**NoteSummary.model_validate(note).model_dump(), snippet=_snippet(note.body, snippet),
                      score=round(float(score), 5)) for note, score, snippet in rows]


def _snippet(body: str, headline: str | None) -> str:
    if headline and "**" in headline:
        return headline
    return (body[:SNIPPET_CHARS] + "…") if len(body) > SNIPPET_CHARS else body
