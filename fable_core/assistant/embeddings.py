"""Note embeddings: the :class:`Embedder` (texts → vectors with ``EMBED_MODEL``, queries and
documents each marked as the model expects, :mod:`.prefixes`; thresholds calibrated per model,
:mod:`.calibration`) and the :class:`EmbeddingWorker` that keeps ``note_embeddings`` current in
the background.

The worker embeds a note (as a document) after every committed save (it subscribes to
``NoteChanged``), feed items as a refresh stores them (:meth:`EmbeddingWorker.enqueue_feed_items`;
their vectors live on ``feed_items`` itself, searched exactly: a user has a few thousand at most)
and, shortly after start and every :data:`BACKFILL_EVERY` seconds in one replica (the
``backfill_embeddings`` job), backfills every note and feed item whose embedding is missing,
older than the note, or stored under another name (``note_embeddings.model`` holds the model
and how documents were marked, :attr:`Marking.space`) — so changing ``EMBED_MODEL`` or the
document prefix re-embeds everything. Embedding happens outside any transaction (a slow model
never holds a database connection); the row is written only if the note still exists. A
provider that is down is retried later; nothing else waits.

When the embeddings come from the chat's own server (no ``EMBED_BASE_URL``), the worker sends
nothing while a model request runs there (``ModelGate.running``): llama.cpp's server ends a
running answer when any other request arrives. It resumes when the last one finishes.

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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, delete, event, exists, insert, select, text
from sqlalchemy.dialects.postgresql import insert as upsert
from sqlalchemy.ext.asyncio import AsyncEngine

from fable_core.assistant.calibration import Calibration, calibrate
from fable_core.assistant.gate import ModelGate
from fable_core.assistant.parts import ASSISTANT
from fable_core.assistant.prefixes import InputType, Marking, marking_for
from fable_core.assistant.providers.base import Provider
from fable_core.config import Settings
from fable_core.db.database import Database
from fable_core.db.errors import backend_died, log_once
from fable_core.db.models import AppLog, EmbeddingFailure, FeedItem, Note, NoteEmbedding
from fable_core.errors import FableError, Unavailable
from fable_core.infra.events import Event, EventBus, NoteChanged
from fable_core.knowledge.vectors import note_text
from fable_core.tools.jobs import job

if TYPE_CHECKING:
    from fable_core.tools.runtime import Runtime

__all__ = ["BACKFILL_EVERY", "MAX_CRASHES", "PAUSE_MAX", "Embedder", "EmbeddingWorker", "backfill_embeddings",
           "embedding_provider", "ensure_index", "scan_filtered_indexes"]

_log = logging.getLogger(__name__)
BACKFILL_EVERY = 600  # seconds between the backfill job's runs, besides each process's own at start
QUERY_TIMEOUT = 10.0  # seconds one interactive embedding (a search, a duplicate check) may take
HNSW_MAX_DIMS = 2000
MAX_CRASHES = 3  # lone writes of one row that killed its backend, before the row is given up
PAUSE_MAX = 600.0  # seconds: the longest pause after failures in a row
_INDEX_LOCK = 0x0F_AB_1E_E1


def content_hash(model: str, text_: str) -> str:
    return hashlib.sha256(f"{model}\0{text_}".encode()).hexdigest()


def embedding_provider(settings: Settings, llm: Provider) -> Provider | None:
    """The provider of a separate embedding server (``EMBED_BASE_URL``), or None when the LLM
    server embeds too (also when that URL is the LLM server's own)."""
    url = (settings.embed_base_url or "").rstrip("/")
    if not url or url == (getattr(llm, "base_url", None) or "").rstrip("/"):
        return None
    from fable_core.assistant.providers.openai import OpenAIProvider

    return OpenAIProvider(url, settings.openai_model, settings.embed_model)


class Embedder:
    """Embeds with the provider's ``EMBED_MODEL``, marking queries and documents as ``marking``
    says; after a failure it stays quiet for ``backoff`` seconds, so searches fall back to
    keywords at once instead of waiting. ``model`` is the name stored embeddings carry."""

    def __init__(self, provider: Provider, marking: Marking | str, *, backoff: float = 15.0) -> None:
        self.provider = provider
        self.marking = Marking(marking) if isinstance(marking, str) else marking
        self.model = self.marking.space
        self.backoff = backoff
        self.query_timeout = QUERY_TIMEOUT
        self.calibration: Calibration | None = None
        self._calibrating = asyncio.Lock()
        self._down_until = 0.0
        self._cache: OrderedDict[tuple[InputType, str], list[float]] = OrderedDict()

    @classmethod
    def from_settings(cls, provider: Provider, settings: Settings) -> Embedder:
        return cls(provider, marking_for(settings))

    @property
    def available(self) -> bool:
        return time.monotonic() >= self._down_until

    async def embed(self, texts: list[str], kind: InputType = "document") -> list[list[float]]:
        """Vectors for ``texts`` as queries or documents; raises Unavailable (and starts the
        back-off) on failure."""
        marked = [self.marking.text(kind, t) for t in texts]
        try:
            vectors = await self.provider.embed(marked, input_type=kind if self.marking.input_type else None)
        except Unavailable:
            self._down_until = time.monotonic() + self.backoff
            raise
        if len(vectors) != len(texts) or not all(vectors):
            raise Unavailable(f"no model available: {self.model} returned unusable embeddings")
        self._down_until = 0.0
        return vectors

    async def calibrated(self) -> Calibration:
        """The model's calibration, measured on first use (:mod:`.calibration`)."""
        async with self._calibrating:
            if self.calibration is None:
                self.calibration = await calibrate(self.embed)
            return self.calibration

    def similarity_at(self, vector: Sequence[float], relevance: float) -> float:
        """The cosine similarity to ``vector`` that lies ``relevance`` spreads above what it
        scores against unrelated text (a vector from :meth:`embed_query` is calibrated)."""
        if self.calibration is None:
            raise RuntimeError("the embedder is not calibrated: vectors come from embed_query")
        return self.calibration.similarity_at(vector, relevance)

    async def embed_query(self, text_: str) -> list[float] | None:
        """A search query's or chat message's vector (see :meth:`_interactive`)."""
        return (await self._interactive("query", text_))[0]

    async def query_or_why(self, text_: str) -> tuple[list[float] | None, str | None]:
        """A search query's vector, or None and why there is none, to say with keyword results
        (a search never drops meaning silently)."""
        return await self._interactive("query", text_)

    async def embed_document(self, text_: str) -> list[float] | None:
        """A note's vector, to compare with other notes (the near-duplicate check)."""
        return (await self._interactive("document", text_))[0]

    async def _interactive(self, kind: InputType, text_: str) -> tuple[list[float] | None, str | None]:
        """One vector, cached; else None and why: the embedder is down, or slower than
        ``query_timeout`` (callers fall back). The first one calibrates the model."""
        key = (kind, text_)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key], None
        if not self.available:
            return None, f"the embedding server failed a moment ago; tried again within {self.backoff:g} s"
        try:
            async with asyncio.timeout(self.query_timeout):
                await self.calibrated()
                [vector] = await self.embed([text_], kind)
        except Unavailable as e:
            _log.info("embedding unavailable: %s", e.message)
            return None, e.message.removeprefix("no model available: ")
        except TimeoutError:  # a search or a save does not wait minutes for an optional vector
            self._down_until = time.monotonic() + self.backoff
            _log.info("embedding took longer than %s s; falling back to keywords", self.query_timeout)
            return None, f"the embedding server did not answer within {self.query_timeout:g} s (busy)"
        self._cache[key] = vector
        if len(self._cache) > 512:
            self._cache.popitem(last=False)
        return vector, None


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

    def __init__(self, db: Database, embedder: Embedder, events: EventBus, *, gate: ModelGate | None = None,
                 batch: int = 32, backfill_delay: float = 2.0, retry_after: float = 30.0,
                 lost_after: float = 5.0) -> None:
        self.db = db
        self.embedder = embedder
        self.gate = gate  # the chat's gate when it shares the embedding server: wait while it runs
        self.batch = batch
        self.backfill_delay = backfill_delay
        self.retry_after = retry_after  # the first pause while the model server is down
        self.lost_after = lost_after  # the first pause after the database lost a write
        self.paused_for = 0.0  # the last pause (0 after a success)
        self._suspects: dict[str, dict[int, None]] = {"notes": {}, "feed items": {}}  # written one at a time
        self._crashes: dict[tuple[str, int], int] = {}  # lone writes that killed the backend, this process
        self._events = events
        self._pending: dict[int, None] = {}
        self._pending_items: dict[int, None] = {}  # feed items
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
            self._crashes.pop(("notes", event.note_id), None)  # new text: a new chance
            self.enqueue([event.note_id])

    def enqueue(self, note_ids: Sequence[int]) -> None:
        for note_id in note_ids:
            if self._crashes.get(("notes", note_id), 0) < MAX_CRASHES:
                self._pending[note_id] = None
        self._woken()

    def enqueue_feed_items(self, item_ids: Sequence[int]) -> None:
        """Embed these feed items (a refresh stored them) soon, after any queued notes."""
        for item_id in item_ids:
            if self._crashes.get(("feed items", item_id), 0) < MAX_CRASHES:
                self._pending_items[item_id] = None
        self._woken()

    def _woken(self) -> None:
        if self._pending or self._pending_items:
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
        """Queue every note and feed item lacking a current embedding; returns how many."""
        return await self._backfill_notes() + await self._backfill_feed_items()

    def _given_up(self, *match: Any) -> Any:
        """Rows given up under this model (MAX_CRASHES), as an EXISTS to negate."""
        return exists().where(and_(*match, EmbeddingFailure.model == self.embedder.model,
                                   EmbeddingFailure.crashes >= MAX_CRASHES))

    async def _backfill_feed_items(self) -> int:
        after, total = 0, 0
        while True:
            async with self.db.transaction() as s:
                ids = list((await s.execute(
                    select(FeedItem.id).where(FeedItem.id > after, FeedItem.embedding_model.is_distinct_from(
                        self.embedder.model), ~self._given_up(EmbeddingFailure.feed_item_id == FeedItem.id))
                    .order_by(FeedItem.id).limit(1000))).scalars())
            if not ids:
                return total
            self.enqueue_feed_items(ids)
            total, after = total + len(ids), ids[-1]

    async def _backfill_notes(self) -> int:
        after, total = 0, 0
        while True:
            async with self.db.transaction() as s:
                ids = list((await s.execute(
                    select(Note.id).outerjoin(NoteEmbedding, NoteEmbedding.note_id == Note.id)
                    .where(Note.id > after,
                           (NoteEmbedding.note_id.is_(None)) | (NoteEmbedding.model != self.embedder.model)
                           | (NoteEmbedding.updated_at < Note.updated_at),
                           ~self._given_up(EmbeddingFailure.note_id == Note.id,
                                           EmbeddingFailure.last_at >= Note.updated_at))
                    .order_by(Note.id).limit(1000)
                )).scalars())
            if not ids:
                return total
            self.enqueue(ids)
            total, after = total + len(ids), ids[-1]

    async def _run(self) -> None:
        while True:
            if not self._pending and not self._pending_items:
                self._idle.set()
                self._wake.clear()
                await self._wake.wait()
            if self.gate is not None:
                await self.gate.quiet()
            pending, embed, what = ((self._pending, self.embed_notes, "notes") if self._pending
                                    else (self._pending_items, self.embed_feed_items, "feed items"))
            suspects = self._suspects[what]
            ids = [next(iter(suspects))] if suspects else list(pending)[: self.batch]
            try:
                await embed(ids)
            except _WriteLost as e:
                await self._lost(what, ids, e.detail)
                continue
            except Unavailable as e:  # the model server (or the database) does not answer
                await self._pause(self.retry_after, e.message, quietly=True)
                continue
            except Exception:  # noqa: BLE001 - one bad batch must not stop the worker
                _log.exception("embedding %s %s failed; skipping them", what, ids)
            self.paused_for = 0.0
            for row_id in ids:
                pending.pop(row_id, None)
                suspects.pop(row_id, None)

    async def _pause(self, first: float, why: str, *, quietly: bool = False) -> None:
        """Wait, twice as long as the last pause (from ``first``, at most PAUSE_MAX), saying why;
        ``quietly`` (a server that does not answer, perhaps for hours): once an hour, with how
        often, not a line a pause."""
        self.paused_for = min(PAUSE_MAX, max(first, 2 * self.paused_for))
        if quietly:
            log_once(_log, logging.WARNING, f"embedding paused (retrying, up to {PAUSE_MAX:.0f} s apart): {why}",
                     every=3600.0)
        else:
            _log.warning("embedding paused for %.0f s: %s", self.paused_for, why)
        await asyncio.sleep(self.paused_for)

    async def _lost(self, what: str, ids: list[int], detail: str) -> None:
        """A write of ``ids`` lost its backend. Pause; then a batch is retried a row at a time,
        and a lone row is counted (given up at MAX_CRASHES)."""
        await self._pause(self.lost_after, f"the database backend writing the embeddings of {what} {ids} "
                                           f"died ({detail})")
        if len(ids) > 1:
            self._suspects[what].update(dict.fromkeys(ids))
            return
        key = (what, ids[0])
        self._crashes[key] = crashes = self._crashes.get(key, 0) + 1
        try:
            await self._count_crash(what, ids[0], crashes, detail)
        except FableError as e:  # still down: this process's count holds meanwhile
            _log.info("could not record the embedding crash of %s %s: %s", what, ids[0], e.message)
        if crashes >= MAX_CRASHES:
            (self._pending if what == "notes" else self._pending_items).pop(ids[0], None)
            self._suspects[what].pop(ids[0], None)

    async def _count_crash(self, what: str, row_id: int, crashes: int, detail: str) -> None:
        column = EmbeddingFailure.note_id if what == "notes" else EmbeddingFailure.feed_item_id
        model = self.embedder.model
        async with self.db.transaction() as s:
            stored = await s.scalar(upsert(EmbeddingFailure).values(
                {column.key: row_id, "model": model, "crashes": crashes, "error": detail})
                .on_conflict_do_update(index_elements=[column], set_={
                    "crashes": EmbeddingFailure.crashes + 1, "error": detail, "model": model,
                    "last_at": text("now()")})
                .returning(EmbeddingFailure.crashes))
            if (stored or crashes) < MAX_CRASHES:
                return
            message = (f"gave up embedding {what[:-1]} {row_id} with {model}: its write killed the database "
                       f"backend {stored} times ({detail}); it is embedded again when it changes")
            _log.error("%s", message)
            await s.execute(insert(AppLog).values(
                category="error", action="embedding.gave_up", error_type="backend_died", error_message=message,
                details={what.replace(" ", "_")[:-1] + "_id": row_id, "model": model, "crashes": stored}))

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
        vectors = await self.embedder.embed([t for _, t in todo], "document")
        with _writing():
            await ensure_index(self.db, len(vectors[0]))
            async with self.db.transaction() as s:
                for (nid, t), vector in zip(todo, vectors, strict=True):
                    await s.execute(_UPSERT, {"id": nid, "model": model, "dims": len(vector),
                                              "hash": content_hash(model, t), "embedding": _literal(vector)})
                await s.execute(delete(EmbeddingFailure).where(EmbeddingFailure.note_id.in_([n for n, _ in todo])))
        return len(todo)


    async def embed_feed_items(self, ids: Sequence[int]) -> int:
        """Embed the given feed items not yet embedded with this model (an item's text does
        not change once stored)."""
        model = self.embedder.model
        async with self.db.reading() as s:
            items = (await s.execute(
                select(FeedItem.id, FeedItem.title, FeedItem.content)
                .where(FeedItem.id.in_(ids), FeedItem.embedding_model.is_distinct_from(model)))).all()
        if not items:
            return 0
        vectors = await self.embedder.embed([note_text(t, c) for _, t, c in items], "document")
        with _writing():
            async with self.db.transaction() as s:
                await s.execute(_SET_ITEM, [{"id": item_id, "model": model, "dims": len(vector),
                                             "embedding": _literal(vector)}
                                            for (item_id, _, _), vector in zip(items, vectors, strict=True)])
                await s.execute(delete(EmbeddingFailure).where(
                    EmbeddingFailure.feed_item_id.in_([item_id for item_id, _, _ in items])))
        return len(items)


class _WriteLost(Exception):
    """A write of embeddings lost its backend (``backend_died``)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


@contextmanager
def _writing() -> Iterator[None]:
    """Tell a write whose backend died from other failures (an outage is ``Unavailable``)."""
    try:
        yield
    except FableError as e:
        if backend_died(e):
            raise _WriteLost(e.message) from e
        raise


def _literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(v)) for v in vector) + "]"


_UPSERT = text(
    "INSERT INTO note_embeddings (note_id, user_id, model, dims, content_hash, embedding, updated_at) "
    "SELECT id, user_id, :model, :dims, :hash, CAST(:embedding AS vector), now() FROM notes WHERE id = :id "
    "ON CONFLICT (note_id) DO UPDATE SET model = excluded.model, dims = excluded.dims, "
    "content_hash = excluded.content_hash, embedding = excluded.embedding, updated_at = now()"
)


_SET_ITEM = text(
    "UPDATE feed_items SET embedding_model = :model, dims = :dims, embedding = CAST(:embedding AS vector) "
    "WHERE id = :id"
)


@job(every=BACKFILL_EVERY)
async def backfill_embeddings(fable: Runtime) -> None:
    """Queue every note and feed item lacking a current embedding, in one replica: those saved
    through a replica that stopped (or was killed) before it embedded them, which only a start
    would find otherwise."""
    worker = assistant.worker if (assistant := fable.part(ASSISTANT)) is not None else None
    if worker is not None:
        await worker.backfill()
