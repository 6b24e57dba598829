"""Generations across processes: several Fable replicas on one PostgreSQL follow, resume and
stop each other's chat answers.

Each generation claimed here has a row in ``generations`` (key, claim, message, owner,
heartbeat, done, stop_requested) and its events in ``generation_events``:

- **Claim.** Before an answer starts its key is claimed in one statement, which succeeds only
  when no live generation holds the key (none, done, or its heartbeat over :data:`STALE_AFTER`
  seconds old): a second send to the same conversation on any process gets the same Conflict.
- **Events.** The running process keeps its in-memory buffer (the fast path for followers on
  the same process) and writes the events to ``generation_events`` in batches, every
  :data:`FLUSH_SECONDS`, off the generation's path: one multi-row INSERT and ONE ``pg_notify``
  per batch in the same transaction, so the notice arrives after the rows are visible. The
  batch that ends a generation sets ``done`` with its last event.
- **Followers elsewhere** replay the stored events after their ``Last-Event-ID`` (event ids
  stay ``<message id>:<n>``, ``n`` is ``seq``), then tail: one LISTEN connection per process
  (:class:`~fable_core.db.listener.Listener`) wakes the followers of the keys a notice names,
  which read ``seq > last``; they also look every :data:`POLL_SECONDS` (a lost notice costs a
  second, never an event).
- **Heartbeat and death.** The running process beats its rows every :data:`BEAT_SECONDS`.
  When it dies, the sweep that marks its answers ``interrupted`` on any live process
  (:func:`~fable_core.infra.generations.recover_interrupted`) deletes their rows and events;
  a follower elsewhere, looking every second (and running that sweep itself once the beat is
  :data:`STALE_AFTER` seconds old), then ends its stream with the answer's ``interrupted`` end
  (:meth:`~fable_core.assistant.service.Assistant.follow`).
- **Outages.** While PostgreSQL is down nobody beats, so a beat's age counts from the
  database's return at the earliest (:func:`~fable_core.infra.generations.beat_stale`): no
  process takes a key over, sweeps an answer or tells its followers it ended for a gap the
  outage made. The writer keeps its events queued (one try a second) and writes them once it
  can; followers elsewhere wait and read on (:data:`~fable_core.infra.generations.PATIENCE`).
- **Stop** through any process: ``stop_requested`` is set and a notice names the key; the
  process running it cancels it (its next beat reads the flag should the notice be lost).
- **Retention.** A finished generation's rows are deleted ``grace`` seconds (60) after it ends
  (by the sweep), and its key's older events when the next generation for the key starts.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection

from fable_core.db.database import Database, rowcount
from fable_core.db.listener import Listener
from fable_core.errors import Conflict, FableError, Unavailable
from fable_core.infra.generations import PATIENCE, Buffer, StreamEvent, beat_stale, parse_event_id

__all__ = ["BEAT_SECONDS", "CHANNEL", "FLUSH_SECONDS", "POLL_SECONDS", "STALE_AFTER", "RemoteFollow", "SharedLog"]

_log = logging.getLogger(__name__)
CHANNEL = "fable_generations"
FLUSH_SECONDS = 0.05
BEAT_SECONDS = 1.0
POLL_SECONDS = 1.0
STALE_AFTER = 10.0  # as a chat answer's own heartbeat (generation.STALE_AFTER)
_PAGE = 500  # events read at once
_KEYS_PER_NOTICE = 60  # keys of at most 100 characters: a payload stays under PostgreSQL's 8,000 bytes

_CLAIM = text("""
INSERT INTO generations (key, claim) VALUES (:key, :claim)
ON CONFLICT (key) DO UPDATE SET claim = excluded.claim, message_id = NULL, owner = NULL, heartbeat = now(),
    done = false, stop_requested = false, finished_at = NULL
WHERE generations.done OR {stale}
   OR generations.claim LIKE :mine
RETURNING key
""".format(stale=beat_stale("generations.heartbeat", ":stale")))
_UNCLAIM = text("DELETE FROM generations WHERE key = :key AND claim = :claim AND message_id IS NULL")
# Every write is fenced by the claim: a process whose claim went stale (it lost the database for
# longer than STALE_AFTER, and another took the key over) writes nothing of its old generation
# when it comes back: no event of it, and no deleting of the newer generation's events.
_STARTED = text("UPDATE generations SET message_id = :message_id, owner = :owner "
                "WHERE key = :key AND claim = :claim RETURNING key")
_OLDER = text("DELETE FROM generation_events WHERE key = :key AND message_id <> :message_id")
_EVENTS = text("""
INSERT INTO generation_events (key, message_id, seq, event, data)
SELECT v.k, v.m, v.s, v.e, CAST(v.d AS jsonb)
FROM unnest(CAST(:keys AS text[]), CAST(:messages AS bigint[]), CAST(:seqs AS int[]), CAST(:events AS text[]),
            CAST(:datas AS text[]), CAST(:claims AS text[])) AS v(k, m, s, e, d, c)
JOIN generations g ON g.key = v.k AND g.claim = v.c AND g.message_id = v.m
ON CONFLICT DO NOTHING
""")
_FINISHED = text("UPDATE generations SET done = true, finished_at = now() WHERE key = :key AND claim = :claim")
_BEAT = text("""
UPDATE generations SET heartbeat = now() WHERE claim = ANY(CAST(:claims AS text[])) AND NOT done
RETURNING claim, key, stop_requested
""")
_STOP = text("UPDATE generations SET stop_requested = true WHERE key = :key AND NOT done RETURNING key")
_READ = text("""
SELECT g.message_id, g.claim, g.done, {stale} AS stale,
       coalesce(g.finished_at < now() - make_interval(secs => :grace), false) AS expired,
       (SELECT coalesce(json_agg(json_build_array(e.seq, e.event, e.data) ORDER BY e.seq), '[]')
        FROM (SELECT seq, event, data FROM generation_events
              WHERE key = g.key AND message_id = g.message_id
                AND seq > CASE WHEN g.message_id = :last_message THEN :after ELSE 0 END
              ORDER BY seq LIMIT :page) e) AS events
FROM generations g WHERE g.key = :key
""".format(stale=beat_stale("g.heartbeat", ":stale")))
_EXPIRE = text("""
WITH gone AS (
    DELETE FROM generations
    WHERE (done AND finished_at < now() - make_interval(secs => :grace))
       OR (message_id IS NULL AND {stale})
       OR {forgotten}
    RETURNING key
)
DELETE FROM generation_events WHERE key IN (SELECT key FROM gone)
""".format(stale=beat_stale("heartbeat", ":stale"), forgotten=beat_stale("heartbeat", ":stale + :grace")))


@dataclass(frozen=True, slots=True)
class _Item:
    buffer: Buffer
    claim: str
    kind: str  # "start", "event" or "finish"
    event: StreamEvent | None = None


class SharedLog:
    """This process's side of the generations in PostgreSQL: claims, the batched event writer,
    the heartbeat, and the waiters of remote followers."""

    def __init__(self, db: Database, *, grace: float = 60.0, stale_after: float = STALE_AFTER) -> None:
        self.db = db
        self.grace = grace
        self.stale_after = stale_after
        self.process = secrets.token_hex(6)
        self._claims = itertools.count(1)
        self.held: dict[str, str] = {}  # key → claim, of the generations this process claimed and runs
        self.stop_local: Callable[[str], bool] = lambda key: False  # stop the key's generation if it runs here
        # what a follower of a generation whose process stopped beating runs, every second until its
        # row goes: the sweep that marks the answer interrupted and deletes the row (recover_interrupted)
        self.on_stale: Callable[[], Awaitable[object]] | None = None
        self._pending: list[_Item] = []
        self._failing = False  # the last flush failed (said once)
        self._flusher: asyncio.Task[None] | None = None
        self._beater: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self.listener = Listener(db.url, {CHANNEL: self._heard})
        self._closed = False

    def start(self) -> None:
        self.listener.start()
        self._beater = asyncio.get_running_loop().create_task(self._beat(), name="fable-generations-beat")

    # -- claims -----------------------------------------------------------------------------

    async def claim(self, key: str, conn: AsyncConnection | None = None) -> None:
        """Claim ``key`` in PostgreSQL for a generation about to start here; Conflict while a live
        one holds it on any process. ``conn``: an autocommit connection to run it on."""
        claim = f"{self.process}.{next(self._claims)}"
        params = {"key": key, "claim": claim, "stale": self.stale_after, "mine": f"{self.process}.%",
                  "reached": self.db.reached_for()}
        if conn is not None:
            row = (await conn.execute(_CLAIM, params)).first()
        else:
            async with self.db.transaction() as s:
                row = (await s.execute(_CLAIM, params)).first()
        if row is None:
            raise Conflict("a generation is already running here; stop it or wait for it", key=key)
        self.held[key] = claim

    def release(self, key: str) -> None:
        """Give up a claim whose generation did not start (in the background: a stale claim is
        free anyway)."""
        claim = self.held.pop(key, None)
        if claim is not None and not self._closed:
            self._spawn(self._unclaim(key, claim))

    async def _unclaim(self, key: str, claim: str) -> None:
        try:
            async with self.db.transaction() as s:
                await s.execute(_UNCLAIM, {"key": key, "claim": claim})
        except FableError as e:
            _log.info("could not release generation %s: %s", key, e.message)

    def attach(self, buffer: Buffer) -> None:
        """Mirror ``buffer`` (a claimed key's) into PostgreSQL."""
        claim = self.held.get(buffer.key)
        if claim is None:
            return
        buffer.sink, buffer.claim = self, claim
        self._queue(_Item(buffer, claim, "start"))

    # -- writing ----------------------------------------------------------------------------

    def emitted(self, buffer: Buffer, event: StreamEvent) -> None:
        self._queue(_Item(buffer, buffer.claim, "event", event))

    def finished(self, buffer: Buffer) -> None:
        self._queue(_Item(buffer, buffer.claim, "finish"))

    def _queue(self, item: _Item) -> None:
        self._pending.append(item)
        if (self._flusher is None or self._flusher.done()) and not self._closed:
            self._flusher = asyncio.get_running_loop().create_task(self._flush_soon(), name="fable-generations-out")

    async def _flush_soon(self) -> None:
        pause = FLUSH_SECONDS
        while self._pending:
            await asyncio.sleep(pause)
            # while the database is down, a try a second at most (not twenty: each would fail)
            pause = FLUSH_SECONDS if await self.flush() else min(max(pause * 2, 0.25), BEAT_SECONDS)

    async def flush(self) -> bool:
        """Write every queued event now: one transaction, one multi-row INSERT, one notice.
        False if they could not be written (they stay queued)."""
        batch, self._pending = self._pending, []
        if not batch:
            return True
        rows: list[tuple[str, int, int, str, str, str]] = []
        keys: dict[str, None] = {}
        try:
            async with self.db.transaction() as s:
                for item in batch:
                    b = item.buffer
                    if item.kind == "start":
                        started = (await s.execute(_STARTED, {"key": b.key, "claim": item.claim,
                                                              "message_id": b.message_id, "owner": b.owner})).first()
                        if started is not None:  # still ours: the key's older events go
                            await s.execute(_OLDER, {"key": b.key, "message_id": b.message_id})
                    elif item.kind == "event" and item.event is not None:
                        seq = int(item.event.id.rsplit(":", 1)[1])
                        rows.append((b.key, b.message_id, seq, item.event.event,
                                     json.dumps(item.event.data, default=str), item.claim))
                    keys[b.key] = None
                if rows:
                    k, m, n, e, d, c = (list(column) for column in zip(*rows, strict=True))
                    await s.execute(_EVENTS, {"keys": k, "messages": m, "seqs": n, "events": e, "datas": d,
                                              "claims": c})
                for item in batch:
                    if item.kind == "finish":
                        await s.execute(_FINISHED, {"key": item.buffer.key, "claim": item.claim})
                await _notify(s, list(keys))
        except asyncio.CancelledError:  # closing mid-flush: close() writes them again
            self._pending[:0] = batch
            raise
        except FableError as e:  # the database is down or busy: said once per outage, not per try
            if not self._failing:
                _log.warning("could not store %d generation events (%s); retrying", len(batch), e.message)
            self._failing = True
            self._pending[:0] = batch
            return False
        except (SQLAlchemyError, OSError):
            _log.warning("could not store %d generation events; retrying", len(batch), exc_info=True)
            self._pending[:0] = batch
            return False
        if self._failing:
            _log.info("stored the generation events held back")
            self._failing = False
        for item in batch:
            if item.kind == "finish" and self.held.get(item.buffer.key) == item.claim:
                del self.held[item.buffer.key]
        return True

    async def _beat(self) -> None:
        """Beat the rows this process holds every second; stop those asked to stop."""
        while True:
            await asyncio.sleep(BEAT_SECONDS)
            claims = list(self.held.values())
            if not claims:
                continue
            try:
                async with self.db.transaction() as s:
                    rows = (await s.execute(_BEAT, {"claims": claims})).all()
            except FableError as e:
                _log.info("could not beat the generations running here: %s", e.message)
                continue
            for row in rows:
                if row.stop_requested:
                    self.stop_local(row.key)

    # -- stopping ---------------------------------------------------------------------------

    async def request_stop(self, key: str) -> bool:
        """Ask whichever process runs ``key``'s generation to stop it; True if one runs."""
        async with self.db.transaction() as s:
            row = (await s.execute(_STOP, {"key": key})).first()
            if row is not None:
                await s.execute(select(func.pg_notify(CHANNEL, json.dumps({"s": key}))))
        return row is not None

    def stop_soon(self, key: str) -> None:
        """:meth:`request_stop` in the background (a conversation deleted: its answer is moot)."""
        if not self._closed:
            self._spawn(self._stop_quietly(key))

    async def _stop_quietly(self, key: str) -> None:
        try:
            await self.request_stop(key)
        except FableError as e:
            _log.info("could not ask for generation %s to stop: %s", key, e.message)

    # -- following --------------------------------------------------------------------------

    def _heard(self, payload: str | None) -> None:
        if payload is None:  # (re)connected: notices may have been lost; everyone looks again
            for waiters in self._waiters.values():
                for waiter in waiters:
                    waiter.set()
            return
        data = json.loads(payload)
        for key in data.get("e", []):
            for waiter in self._waiters.get(key, ()):
                waiter.set()
        if "s" in data:
            self.stop_local(data["s"])

    async def open(self, key: str, last_event_id: str | None, *,
                   heartbeat: float | None = None) -> RemoteFollow | None:
        """A follower of ``key``'s generation as PostgreSQL has it; None when there is none (never
        claimed, abandoned, finished over ``grace`` seconds ago, or run here: this process's
        buffer, or its absence, answers for those)."""
        follow = RemoteFollow(self, key, last_event_id, heartbeat)
        follow.waiter = asyncio.Event()
        self._waiters.setdefault(key, set()).add(follow.waiter)
        try:
            snapshot = await follow.read()
        except BaseException:
            follow.close()
            raise
        if (snapshot is None or snapshot.expired or (snapshot.message_id is None and snapshot.stale)
                or snapshot.claim.startswith(f"{self.process}.")):
            # none, or one this process runs or ran: its buffer (gone after its grace) is its word
            follow.close()
            return None
        follow.snapshot = snapshot
        return follow

    def _unwait(self, key: str, waiter: asyncio.Event) -> None:
        waiters = self._waiters.get(key)
        if waiters is not None:
            waiters.discard(waiter)
            if not waiters:
                del self._waiters[key]

    # -- death and retention ----------------------------------------------------------------

    async def sweep(self) -> int:
        """What every process's sweep runs: finished generations deleted with their events
        ``grace`` seconds after they ended, abandoned claims and rows nobody beats any more too
        (a dead process's answers go with :func:`~fable_core.infra.generations.recover_interrupted`).
        Returns how many events went."""
        async with self.db.transaction() as s:
            return rowcount(await s.execute(_EXPIRE, {"grace": self.grace, "stale": self.stale_after,
                                                      "reached": self.db.reached_for()}))

    # -- closing ----------------------------------------------------------------------------

    def _spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        self._closed = True
        for task in (self._beater, self._flusher):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._pending:
            try:
                await self.flush()
            except FableError as e:
                _log.info("could not store the last generation events: %s", e.message)
        await self.listener.close()


async def _notify(s: Any, keys: list[str]) -> None:
    for i in range(0, len(keys), _KEYS_PER_NOTICE):
        await s.execute(select(func.pg_notify(CHANNEL, json.dumps({"e": keys[i:i + _KEYS_PER_NOTICE]}))))


@dataclass
class _Snapshot:
    message_id: int | None
    claim: str
    done: bool
    stale: bool
    expired: bool
    events: list[list[Any]]


class RemoteFollow:
    """One follower of a generation run by another process (or by none any more)."""

    def __init__(self, log: SharedLog, key: str, last_event_id: str | None, heartbeat: float | None) -> None:
        self.log = log
        self.key = key
        self.heartbeat = heartbeat
        self.last = parse_event_id(last_event_id) or (0, 0)
        self.waiter = asyncio.Event()
        self.snapshot: _Snapshot | None = None
        self.lost_since: float | None = None  # when reading it began to fail (the database is down)

    async def read(self) -> _Snapshot | None:
        self.waiter.clear()  # before reading: a notice from now on wakes the wait after it
        async with self.log.db.reading() as s:
            row = (await s.execute(_READ, {
                "key": self.key, "stale": self.log.stale_after, "grace": self.log.grace,
                "reached": self.log.db.reached_for(),
                "last_message": self.last[0], "after": self.last[1], "page": _PAGE})).first()
        if row is None:
            return None
        return _Snapshot(row.message_id, row.claim, row.done, row.stale, row.expired, row.events)

    @property
    def message_id(self) -> int | None:
        """The generation's message (None while it is starting)."""
        return None if self.snapshot is None else self.snapshot.message_id

    def close(self) -> None:
        self.log._unwait(self.key, self.waiter)

    async def __aiter__(self) -> AsyncIterator[StreamEvent | None]:
        loop = asyncio.get_running_loop()
        quiet_since = loop.time()
        snapshot = self.snapshot
        following: int | None = None  # the generation it follows, once it has started
        try:
            while True:
                if snapshot is None or (following is not None and snapshot.message_id != following):
                    return  # gone, or the key's next generation: this one is over
                following = snapshot.message_id
                for seq, event, data in snapshot.events:
                    assert snapshot.message_id is not None
                    self.last = (snapshot.message_id, seq)
                    quiet_since = loop.time()
                    yield StreamEvent(f"{snapshot.message_id}:{seq}", event, data)
                if len(snapshot.events) >= _PAGE:
                    snapshot = await self._next(snapshot)
                    continue
                if snapshot.done:
                    return
                if snapshot.stale:  # its process stopped beating: the sweep ends it (its row goes)
                    if snapshot.message_id is None:  # a claim abandoned before its answer started
                        return
                    if self.log.on_stale is not None:
                        await self.log.on_stale()
                wait = POLL_SECONDS
                if self.heartbeat is not None:
                    wait = min(wait, max(quiet_since + self.heartbeat - loop.time(), 0.0))
                try:
                    await asyncio.wait_for(self.waiter.wait(), wait)
                except TimeoutError:
                    if self.heartbeat is not None and loop.time() - quiet_since >= self.heartbeat:
                        quiet_since = loop.time()
                        yield None
                snapshot = await self._next(snapshot)
        finally:
            self.close()

    async def _next(self, snapshot: _Snapshot) -> _Snapshot | None:
        """The generation as stored now; while the database cannot be reached (up to
        :data:`PATIENCE` seconds), ``snapshot`` without its events: the follower waits and looks
        again, as the writer waits to write, rather than ending a live answer's stream."""
        try:
            fresh = await self.read()
        except Unavailable:
            loop = asyncio.get_running_loop()
            self.lost_since = self.lost_since or loop.time()
            if loop.time() - self.lost_since > PATIENCE:
                raise
            return replace(snapshot, events=[], stale=False)
        self.lost_since = None
        return fresh
