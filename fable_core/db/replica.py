"""A read replica (``DATABASE_READ_URL``): which reads may run on it, correctly across processes.

Only the read sessions of read-scope tool calls made for a person are candidates (the
dispatcher asks, :meth:`fable_core.db.database.Database.replica_reading`); everything else
stays on the primary: write tools, every ``transaction()``, the read phases of write tools,
background work (``surface="internal"``: jobs, summaries, preps), live streams (``stream=True``
tools follow rows written a moment ago, as a NOTIFY says), sign-in and session lookups
(they use ``Database.reading()`` directly), migrations and ``fable db upgrade``.

For one read, with W = ``FABLE_READ_YOUR_WRITES_SECONDS``:

1. The caller wrote within W: the primary. Where "the caller wrote at T" lives decides whether
   this holds behind a load balancer: a per-process note would miss a write that another Fable
   process served. So each write transaction of a tool stamps its caller's row in the primary's
   ``recent_writes`` (UNLOGGED) just before it commits: visible to every process the moment the
   write is. Each read looks it up there (one primary key read on the primary, together with
   the primary's WAL position and clock); this process's own writes are also noted in memory,
   which skips that lookup.
2. Else the replica, when it is fresh enough, asked on the replica session before the read
   (at the same time as the primary, so the two round trips cost one):
   it has replayed all the WAL the primary had when the read began (then it holds every commit,
   anyone's), or its last replayed commit is less than W/2 old by the primary's clock (so
   every commit older than W/2 is there; a younger write of this caller is caught by 1, as its
   stamp is taken just before its commit: only a commit slower than W/2 after its last
   statement could slip between them).
3. The replica unreachable, failing, lagging more than that: the primary; a user never sees an
   error for it. After a failure the replica is left alone for :data:`RETRY_AFTER` seconds, so
   a dead host costs one connect timeout, not one per call. A read that fails on the replica
   midway (the replica gone, the query cancelled by replay) is run again on the primary when
   the tool runs in one session (:class:`ReplicaFailed`); a ``phases`` tool's read phase
   cannot be repeated, and fails as ``Unavailable``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from fable_core.errors import Unavailable

__all__ = ["CONNECT_TIMEOUT", "RETRY_AFTER", "STAMP", "Replica", "ReplicaFailed", "lsn"]

CONNECT_TIMEOUT = 2.0  # seconds to reach the replica before the primary answers instead
RETRY_AFTER = 5.0  # seconds the replica is left alone after it could not be reached
_log = logging.getLogger(__name__)

# In the writing transaction, its last statement: the caller wrote (now, by the primary's clock).
STAMP = text(
    "INSERT INTO recent_writes (writer_id, written_at) VALUES (:writer, clock_timestamp()) "
    "ON CONFLICT (writer_id) DO UPDATE SET written_at = excluded.written_at")
# The insert position, not the write position: past every commit, asynchronous ones included.
_ON_PRIMARY = text(
    "SELECT pg_current_wal_insert_lsn()::text, clock_timestamp(), EXISTS (SELECT 1 FROM recent_writes "
    "WHERE writer_id = :writer AND written_at > clock_timestamp() - make_interval(secs => :window))")
_STATUS = text("SELECT pg_is_in_recovery(), extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8")
_ON_REPLICA = text("SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text, pg_last_xact_replay_timestamp()")


def lsn(position: str | None) -> int:
    """A WAL position (``16/B374D848``) as a number; none (NULL) is 0."""
    if not position:
        return 0
    high, _, low = position.partition("/")
    return (int(high, 16) << 32) + int(low, 16)


class ReplicaFailed(Unavailable):
    """A read failed on the replica, for a reason of the replica's (gone mid-read, a query
    cancelled by replay, a schema it has not replayed): the primary can answer the same read.
    The dispatcher does so for read tools that run in one session; a phase of a ``phases`` tool
    cannot be run again, so there it stays this ``Unavailable``."""


class Replica:
    """The replica's engine, and what this process knows: its callers' recent writes, and
    whether the replica answered lately. ``routed`` counts where candidate reads went."""

    def __init__(self, engine: AsyncEngine, primary: AsyncEngine, window: float) -> None:
        self.engine = engine
        self.window = window
        self._primary = primary.execution_options(isolation_level="AUTOCOMMIT")
        self._sessions = async_sessionmaker(
            engine.execution_options(isolation_level="AUTOCOMMIT"), expire_on_commit=False, autoflush=False)
        self._wrote: dict[int, float] = {}
        self._down_until = 0.0
        self.routed = {"replica": 0, "primary": 0, "failed": 0}

    def wrote(self, user_id: int) -> None:
        """``user_id``'s write committed here: their reads skip the replica for the window."""
        now = time.monotonic()
        if len(self._wrote) > 10_000:  # forget the expired, now and then
            self._wrote = {u: t for u, t in self._wrote.items() if now - t < self.window}
        self._wrote[user_id] = now

    async def session(self, user_id: int) -> AsyncSession | None:
        """An open replica session fit for ``user_id``'s read now, or None: read on the primary."""
        session = await self._fresh_session(user_id)
        self.routed["primary" if session is None else "replica"] += 1
        return session

    async def _fresh_session(self, user_id: int) -> AsyncSession | None:
        now = time.monotonic()
        if now < self._down_until or now - self._wrote.get(user_id, -self.window) < self.window:
            return None
        # Both questions at once: each answer is taken after the read began, which is all the
        # rule needs (a commit before the read is at or below the primary's position then).
        session = self._sessions()
        primary, replica = await asyncio.gather(self._ask_primary(user_id), session.execute(_ON_REPLICA),
                                                return_exceptions=True)
        if isinstance(replica, BaseException) or isinstance(primary, BaseException) or primary[2]:
            await session.close()
            if isinstance(primary, BaseException):  # the primary down: the read fails there too
                raise primary
            if isinstance(replica, BaseException):
                if not isinstance(replica, (OSError, DBAPIError, PoolTimeout)):
                    raise replica
                self._unreachable(replica)
            return None
        position, primary_now, _ = primary
        recovering, replayed, replayed_commit = replica.one()
        if recovering and lsn(replayed) < lsn(position) and (
                replayed_commit is None or replayed_commit <= primary_now - timedelta(seconds=self.window / 2)):
            await session.close()
            _log.debug("read replica lags more than %.1f s: reading on the primary", self.window / 2)
            return None
        return session

    async def _ask_primary(self, user_id: int) -> tuple[str, datetime, bool]:
        """The primary's WAL position and clock, and whether ``user_id`` wrote within the window."""
        async with self._primary.connect() as conn:
            position, primary_now, wrote = (await conn.execute(
                _ON_PRIMARY, {"writer": user_id, "window": self.window})).one()
        return position, primary_now, wrote

    def failed(self, e: BaseException) -> bool:
        """Whether ``e``, raised by a read on the replica, is the replica's failure (then it is
        left alone for a while) rather than the request's: bad data (SQLSTATE classes 22, 23)
        fails on the primary alike, and must not take the replica out of service."""
        orig = getattr(e, "orig", None)
        sqlstate = getattr(orig, "sqlstate", None) or getattr(getattr(orig, "__cause__", None), "sqlstate", None)
        if isinstance(sqlstate, str) and sqlstate[:2] in ("22", "23"):
            return False
        self.routed["failed"] += 1
        self._unreachable(e)
        return True

    def _unreachable(self, e: BaseException) -> None:
        self._down_until = time.monotonic() + RETRY_AFTER
        _log.warning("read replica unavailable (%s): reading on the primary for %.0f s",
                     str(e).splitlines()[0][:200] if str(e) else type(e).__name__, RETRY_AFTER)

    async def status(self) -> dict[str, Any]:
        """For /api/health: whether the replica answers, and how far its replay is behind (the
        age of its last replayed commit, which also grows while the primary is idle)."""
        try:
            async with self.engine.connect() as conn:
                recovering, lag = (await conn.execute(_STATUS)).one()
        except (OSError, DBAPIError, PoolTimeout) as e:
            return {"status": "unavailable", "error": str(e).splitlines()[0][:200] if str(e) else type(e).__name__}
        answer: dict[str, Any] = {"status": "ok" if recovering else "not a replica"}
        if lag is not None:
            answer["last_replayed_commit_seconds"] = round(lag, 3)
        if time.monotonic() < self._down_until:
            answer["status"] = "resting"  # a read failed on it lately: reads go to the primary a while
        return answer

    async def close(self) -> None:
        await self.engine.dispose()

