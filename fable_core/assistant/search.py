"""Hybrid note search: vector neighbours and full-text matches fused by reciprocal rank, and
the semantic near-duplicate check ``create_note`` runs.

Reciprocal rank fusion scores a note ``sum(1 / (60 + rank))`` over the two rankings, so a note
high in either list rises, and one high in both rises most, without comparing incomparable
scores. Vector neighbours below :data:`MIN_SIMILARITY` are left out (every note is *some*
distance away). Without an embedder, or while it is down, callers get ``None`` and fall back to
keyword search, which says ``mode="keyword"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, func, select

from fable_core.assistant.embeddings import Embedder, nearest, note_text
from fable_core.db.models import Note
from fable_core.errors import NeedsConfirmation
from fable_core.knowledge.views import NoteSummary, SearchHit, SearchResults
from fable_core.tools.context import Context

__all__ = ["DUPLICATE_SIMILARITY", "MIN_SIMILARITY", "check_semantic_duplicate", "duplicate_probe",
           "embedder_of", "hybrid_search", "query_vector", "rrf"]

RRF_K = 60
MIN_SIMILARITY = 0.30
DUPLICATE_SIMILARITY = 0.90
DUPLICATE_MIN_BODY = 80
_HEADLINE = "StartSel=**,StopSel=**,MaxWords=24,MinWords=8,MaxFragments=2,FragmentDelimiter= … "


def embedder_of(ctx: Context) -> Embedder | None:
    embedder = ctx.services.get("embedder")
    return embedder if isinstance(embedder, Embedder) else None


def rrf(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[tuple[int, float]]:
    """Fuse rankings of ids; best first, ties broken by the higher id (newer first)."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], -kv[0]))


async def query_vector(ctx: Context, query: str) -> list[float] | None:
    """The query's embedding, or None without an embedder (or while it is down). Asked before
    the search opens its session: the embedding server is remote, and no connection waits on it."""
    embedder = embedder_of(ctx)
    return await embedder.embed_query(query) if embedder else None


async def hybrid_search(
    ctx: Context, query: str, vector: list[float] | None, where: list[Any], *, offset: int, limit: int
) -> SearchResults | None:
    """One page of fused results, or None when semantic search cannot run (or finds nothing)."""
    embedder = embedder_of(ctx)
    if embedder is None or vector is None:
        return None
    depth = max(offset + limit + 1, 50)
    tsq = func.websearch_to_tsquery("english", query)
    keyword = list((await ctx.session.execute(
        select(Note.id).where(and_(*where), Note.search_vector.op("@@")(tsq))
        .order_by(func.ts_rank_cd(Note.search_vector, tsq, 1).desc(), Note.id.desc()).limit(depth)
    )).scalars())
    semantic = await nearest(ctx.session, ctx.user_id, vector, embedder.model, limit=depth,
                             where=where, min_similarity=MIN_SIMILARITY)
    fused = rrf([keyword, [note_id for note_id, _ in semantic]])
    if not fused:
        return None
    page = fused[offset: offset + limit + 1]
    return SearchResults(query=query, mode="hybrid", items=await _hits(ctx, page[:limit], tsq),
                         next_cursor=_cursor(offset + limit) if len(page) > limit else None)


async def _hits(ctx: Context, page: list[tuple[int, float]], tsq: Any) -> list[SearchHit]:
    headline = func.ts_headline("english", func.left(Note.body, 20_000), tsq, _HEADLINE)
    rows = {note.id: (note, snippet) for note, snippet in (await ctx.session.execute(
        select(Note, headline).where(Note.id.in_([nid for nid, _ in page]))
    )).all()}
    hits = []
    for note_id, score in page:
        if note_id in rows:
            note, snippet = rows[note_id]
            hits.append(SearchHit(**NoteSummary.model_validate(note).model_dump(),
                                  snippet=_snippet(note, snippet), score=round(score, 5)))
    return hits


def _snippet(note: Note, headline: str) -> str:
    if headline and "**" in headline:
        return headline
    return (note.body[:160] + "…") if len(note.body) > 160 else note.body


def _cursor(offset: int) -> str:
    from fable_core.knowledge.paging import encode_cursor

    return encode_cursor("search", [offset])


async def duplicate_probe(ctx: Context, title: str, body: str) -> list[float] | None:
    """The embedding :func:`check_semantic_duplicate` compares, made before the note's
    transaction opens (the embedding server is remote); None when there is nothing to check."""
    embedder = embedder_of(ctx)
    if embedder is None or len(body.strip()) < DUPLICATE_MIN_BODY:
        return None
    return await embedder.embed_query(note_text(title, body))


async def check_semantic_duplicate(ctx: Context, vector: list[float] | None) -> None:
    """Raise NeedsConfirmation when a note of the caller says nearly the same (similarity
    >= 0.90, body >= 80 characters: the ``vector`` of :func:`duplicate_probe`)."""
    embedder = embedder_of(ctx)
    if embedder is None or vector is None:
        return
    hits = await nearest(ctx.session, ctx.user_id, vector, embedder.model, limit=1,
                         min_similarity=DUPLICATE_SIMILARITY)
    if not hits:
        return
    note_id, similarity = hits[0]
    existing = await ctx.session.scalar(select(Note.title).where(Note.id == note_id))
    raise NeedsConfirmation(
        f"note {note_id} {existing!r} says nearly the same ({similarity:.2f} similar); update it "
        f"instead, or repeat create_note with confirm=true to create this note anyway",
        requires_confirmation=True, similar_note_id=note_id, similar_title=existing,
        similarity=round(similarity, 3),
    )
