"""Notes by meaning: nearest-neighbour queries over ``note_embeddings``, and the semantic
near-duplicate check ``create_note`` runs.

The knowledge domain does not depend on the assistant: it sees the embedding model only through
:class:`QueryEmbedder`, which the runtime holds (``Fable.embedder``, installed by the assistant
capability when a model provider is configured). Without one, or while it is down, every caller
here gets None and falls back to words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, Protocol

from pgvector.sqlalchemy import Vector
from sqlalchemy import Select, bindparam, cast, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from fable_core.db.models import Note, NoteEmbedding
from fable_core.errors import NeedsConfirmation
from fable_core.tools.access import reach_of, readable_param
from fable_core.tools.caller import Caller
from fable_core.tools.context import Context
from fable_core.tools.runtime import Part

__all__ = [
    "DUPLICATE_MIN_BODY",
    "DUPLICATE_SIMILARITY",
    "EMBEDDER",
    "MAX_TEXT",
    "QueryEmbedder",
    "check_semantic_duplicate",
    "duplicate_probe",
    "embedder_of",
    "nearest",
    "note_text",
    "query_vector",
]

DUPLICATE_SIMILARITY = 0.90
DUPLICATE_MIN_BODY = 80
MAX_TEXT = 6000


class QueryEmbedder(Protocol):
    """What knowledge needs of an embedding model: the name its stored embeddings carry, one
    vector for a query or a document (None when the model cannot answer now), and where
    "related" starts for a query (``similarity_at``: the cosine that lies ``relevance`` spreads
    above what the query scores against unrelated text; calibrated per model, see
    ``fable_core.assistant.calibration``)."""

    @property
    def model(self) -> str: ...

    async def embed_query(self, text: str) -> list[float] | None: ...

    async def query_or_why(self, text: str) -> tuple[list[float] | None, str | None]: ...

    async def embed_document(self, text: str) -> list[float] | None: ...


    def similarity_at(self, vector: Sequence[float], relevance: float) -> float: ...


EMBEDDER: Part[QueryEmbedder] = Part("embedder")
"""The runtime's query embedder, when a model provider embeds (installed by the assistant)."""


def note_text(title: str, body: str) -> str:
    """What is embedded for a note: its title, then the start of its body."""
    return f"{title}\n\n{body}"[:MAX_TEXT]


def embedder_of(ctx: Context) -> QueryEmbedder | None:
    return ctx.runtime.part(EMBEDDER) if ctx.runtime is not None else None


async def query_vector(ctx: Context, query: str) -> tuple[list[float] | None, str | None]:
    """The query's embedding, or None without an embedder, or None and why while it fails (said
    with the keyword results). Asked before a search opens its session: the embedding server is
    remote, and no connection waits on it."""
    embedder = embedder_of(ctx)
    return await embedder.query_or_why(query) if embedder else (None, None)


async def nearest(
    session: AsyncSession | AsyncConnection, caller: Caller, vector: Sequence[float], model: str, *,
    limit: int, where: Sequence[Any] = (), min_similarity: float = 0.0, columns: Sequence[Any] = (),
    params: Mapping[str, Any] | None = None,
) -> list[tuple[Any, ...]]:
    """The caller's notes closest to ``vector``: ``(note_id, cosine similarity, *columns)``,
    best first (equals by the higher id), filtered by extra ``where`` clauses on :class:`Note`
    (their ``bindparam`` values in ``params``).

    The statement is built once per dimension, limit, ``where`` and ``columns`` (compared by
    identity) and then only executed: building it costs more than running it. Callers on a hot
    path therefore pass module-level clauses with bound parameters, not fresh ones."""
    reach = await reach_of(session, caller)
    statement = _nearest_statement(len(vector), limit, tuple(columns), tuple(where), reach.alone)
    rows = (await session.execute(statement, {
        **(params or {}), "_vector": vector, "_model": model, **reach.params()})).all()
    hits = [(row[0], 1.0 - float(row[1]), *row[2:]) for row in rows]
    # ties (notes saying the same) in one order every time, the newer first: the index returns
    # equal distances in whatever order its walk met them, and a second page must not reorder them
    return sorted((h for h in hits if h[1] >= min_similarity), key=lambda h: (-h[1], -h[0]))


@lru_cache(maxsize=128)
def _nearest_statement(dims: int, limit: int, columns: tuple[Any, ...], where: tuple[Any, ...],
                       alone: bool) -> Select[Any]:
    # Cast to the model's dimension and filter on ``dims``: the shape the per-dimension partial
    # HNSW index (``fable_core.assistant.embeddings.ensure_index``) answers.
    distance = cast(NoteEmbedding.embedding, Vector(dims)).cosine_distance(bindparam("_vector", type_=Vector(dims)))
    return (
        select(NoteEmbedding.note_id, distance.label("distance"), *columns)
        .join(Note, Note.id == NoteEmbedding.note_id)
        .where(NoteEmbedding.dims == dims, NoteEmbedding.model == bindparam("_model"),
               readable_param(NoteEmbedding if alone else Note, alone), *where)
        .order_by(distance).limit(limit)
    )


async def duplicate_probe(ctx: Context, title: str, body: str) -> list[float] | None:
    """The embedding :func:`check_semantic_duplicate` compares (the note as a document, like the
    notes it is compared with), made before the note's transaction opens (the embedding server
    is remote); None when there is nothing to check."""
    embedder = embedder_of(ctx)
    if embedder is None or len(body.strip()) < DUPLICATE_MIN_BODY:
        return None
    return await embedder.embed_document(note_text(title, body))


async def check_semantic_duplicate(ctx: Context, vector: list[float] | None) -> None:
    """Raise NeedsConfirmation when a note of the caller says nearly the same (similarity
    >= 0.90, body >= 80 characters: the ``vector`` of :func:`duplicate_probe`)."""
    embedder = embedder_of(ctx)
    if embedder is None or vector is None:
        return
    hits = await nearest(ctx.session, ctx.caller, vector, embedder.model, limit=1,
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
