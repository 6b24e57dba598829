"""Note embeddings: the :class:`Embedder` (texts → vectors with ``EMBED_MODEL``) and the
:class:`EmbeddingWorker` that keeps ``note_embeddings`` current in the background.

The worker embeds a note after every committed save (it subscribes to ``NoteChanged``) and,
shortly after start, backfills every note whose embedding is missing, older than the note, or
made by another model — so changing ``EMBED_MODEL`` re-embeds everything. Embedding happens
outside any transaction (a slow model never holds a database connection); the row is written
only if the note still exists. A provider that is down is retried later; nothing else waits.

Dimensions: the model decides. The column is a dimensionless ``vector`` with a ``dims`` column,
and each dimension gets its own partial HNSW expression index, created here the first time a
model of that size is seen (pgvector's HNSW stops at 2000 dimensions: larger models are
searched exactly, without an index).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import event, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from fable_core.assistant.providers.base import Provider
from fable_core.db.database import Database
from fable_core.db.models import Note, NoteEmbedding
from fable_core.errors import Unavailable
from fable_core.events import Event, EventBus, NoteChanged
from fable_core.knowledge.vectors import note_text

__all__ = ["Embedder", "EmbeddingWorker", "ensure_index", "scan_filtered_indexes"]

_log = logging.getLogger(__name__)
QUERY_TIMEOUT = 10.0  # seconds one interactive embedding (a search, a duplicate check) may take
HNSW_MAX_DIMS = 2000
_INDEX_LOCK = 0x0F_AB_1E_E1


def content_hash(model: str, text_: str) -> str:
    return hashlib.sha256(f"{model}\0{text_}".encode()).hexdigest()


class Embedder:
    """Embeds with the provider's ``EMBED_MODEL``; after a failure it stays quiet for
    ``backoff`` seconds, so searches fall back to keywords at once instead of waiting."""

    def __init__(self, provider: Provider, model: str, *, backoff: float = 15.0) -> None:
        self.provider = provider
        self.model = model
        self.backoff = backoff
        self._down_until = 0.0
        self._cache: OrderedDict[str, list[float]] = OrderedDict()

    @property
    def available(self) -> bool:
        return time.monotonic() >= self._down_until

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """Vectors for ``texts``; raises Unavailable (and starts the back-off) on failure."""
        try:
            vectors = await self.provider.embed(texts)
        except Unavailable:
            self._down_until = time.monotonic() + self.backoff
            raise
        if len(vectors) != len(texts) or not all(vectors):
            raise Unavailable(f"no model available: {self.model} returned unusable embeddings")
        self._down_until = 0.0
        return vectors

    async def embed_query(self, text_: str) -> list[float] | None:
        """One vector, cached; None while the embedder is down or slower than QUERY_TIMEOUT
    (callers fall back)."""
        if text_ in self._cache:
            self._cache.move_to_end(text_)
            return self._cache[text_]
        if not self.available:
            return None
        try:
            async with asyncio.timeout(QUERY_TIMEOUT):
                [vector] = await self.embed([text_])
        except Unavailable as e:
            _log.info("embedding unavailable: %s", e.message)
            return None
        except TimeoutError:  # a search or a save does not wait minutes for an optional vector
            self._down_until = time.monotonic() + self.backoff
            _log.info("embedding took longer than %s s; falling back to keywords", QUERY_TIMEOUT)
            return None
        self._cache[text_] = vector
        if len(self._cache) > 512:
            self._cache.popitem(last=False)
        return vector


_known_indexes: set[tuple[str, int]] = set()


async def ensure_index(db: Database, dims: int) -> None:
    """Create the HNSW index for ``dims`` once (idempotent, serialised by an advisory lock)."""
    key = (db.url, dims)
    if key in _known_indexes or dims > HNSW_MAX_DIMS:
        return
    async with db.engine.begin() as conn:
        await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _INDEX_LOCK})
        await conn.execute(text(
            f"CREATE INDEX IF NOT EXISTS ix_note_embeddings_hnsw_{int(dims)} ON note_embeddings "
            f"USING hnsw ((embedding::vector({int(dims)})) vector_cosine_ops) WHERE dims = {int(dims)}"
        ))
    _known_indexes.add(key)


def scan_filtered_indexes(engine: AsyncEngine) -> None:
    """Make every connection of ``engine`` keep scanning an HNSW index until enough rows pass
    the query's filters (pgvector's iterative scan): without it a filtered nearest-neighbour
    query may return fewer rows than asked. Set once per connection, not per query, and
    committed: the driver runs it in a transaction of its own, which a first checkout in
    autocommit mode would otherwise roll back (leaving the connection without it for good)."""

    @event.listens_for(engine.sync_engine, "connect")
    def _set(dbapi_connection: Any, _: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("SET hnsw.iterative_scan = relaxed_order")
        cursor.close()
        dbapi_connection.commit()


class EmbeddingWorker:
    """Background embedding of changed and stale notes. ``await idle()`` waits until caught up."""

    def __init__(self, db: Database, embedder: Embedder, events: EventBus, *,
                 batch: int = 32, backfill_delay: float = 2.0, retry_after: float = 30.0) -> None:
        self.db = db
        self.embedder = embedder
        self.batch = batch
        self.backfill_delay = backfill_delay
        self.retry_after = retry_after
        self._events = events
        self._pending: dict[int, None] = {}
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._unsubscribe: Callable[[], None] = lambda: None
        self._backfilled = asyncio.Event()

    def start(self) -> None:
        self._unsubscribe = self._events.subscribe(self._on_event)
        self._tasks = [asyncio.create_task(self._run(), name="fable-embeddings"),
                       asyncio.create_task(self._backfill_later(), name="fable-embeddings-backfill")]

    async def stop(self) -> None:
        self._unsubscribe()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _on_event(self, event: Event) -> None:
        if isinstance(event, NoteChanged) and event.kind != "deleted":
            self.enqueue([event.note_id])

    def enqueue(self, note_ids: Sequence[int]) -> None:
        for note_id in note_ids:
            self._pending[note_id] = None
        if self._pending:
            self._idle.clear()
            self._wake.set()

    async def idle(self, *, backfill: bool = True) -> None:
        """Return once the start-up backfill (if asked) and every queued note are done."""
        if backfill:
            await self._backfilled.wait()
        await self._idle.wait()

    async def _backfill_later(self) -> None:
        try:
            await asyncio.sleep(self.backfill_delay)
            await self.backfill()
        finally:
            self._backfilled.set()

    async def backfill(self) -> int:
        """Queue every note lacking a current embedding; returns how many."""
        after, total = 0, 0
        while True:
            async with self.db.transaction() as s:
                ids = list((await s.execute(
                    select(Note.id).outerjoin(NoteEmbedding, NoteEmbedding.note_id == Note.id)
                    .where(Note.id > after,
                           (NoteEmbedding.note_id.is_(None)) | (NoteEmbedding.model != self.embedder.model)
                           | (NoteEmbedding.updated_at < Note.updated_at))
                    .order_by(Note.id).limit(1000)
                )).scalars())
            if not ids:
                return total
            self.enqueue(ids)
            total, after = total + len(ids), ids[-1]

    async def _run(self) -> None:
        while True:
            if not self._pending:
                self._idle.set()
                self._wake.clear()
                await self._wake.wait()
            ids = list(self._pending)[: self.batch]
            try:
                await self.embed_notes(ids)
            except Unavailable as e:
                _log.warning("embedding paused for %.0f s: %s", self.retry_after, e.message)
                await asyncio.sleep(self.retry_after)
                continue
            except Exception:  # noqa: BLE001 - one bad batch must not stop the worker
                _log.exception("embedding notes %s failed; skipping them", ids)
            for note_id in ids:
                self._pending.pop(note_id, None)

    async def embed_notes(self, ids: Sequence[int]) -> int:
        """Embed the given notes whose text changed since their last embedding."""
        model = self.embedder.model
        async with self.db.transaction() as s:
            notes = (await s.execute(select(Note.id, Note.title, Note.body).where(Note.id.in_(ids)))).all()
            known = dict((await s.execute(
                select(NoteEmbedding.note_id, NoteEmbedding.content_hash).where(NoteEmbedding.note_id.in_(ids))
            )).all())
        todo = [(nid, note_text(t, b)) for nid, t, b in notes]
        todo = [(nid, t) for nid, t in todo if known.get(nid) != content_hash(model, t)]
        if not todo:
            return 0
        vectors = await self.embedder.embed([t for _, t in todo])
        await ensure_index(self.db, len(vectors[0]))
        async with self.db.transaction() as s:
            for (nid, t), vector in zip(todo, vectors, strict=True):
                await s.execute(_UPSERT, {"id": nid, "model": model, "dims": len(vector),
                                          "hash": content_hash(model, t), "embedding": _literal(vector)})
        return len(todo)


def _literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(v)) for v in vector) + "]"


_UPSERT = text(
    "INSERT INTO note_embeddings (note_id, user_id, model, dims, content_hash, embedding, updated_at) "
    "SELECT id, user_id, :model, :dims, :hash, CAST(:embedding AS vector), now() FROM notes WHERE id = :id "
    "ON CONFLICT (note_id) DO UPDATE SET model = excluded.model, dims = excluded.dims, "
    "content_hash = excluded.content_hash, embedding = excluded.embedding, updated_at = now()"
)

