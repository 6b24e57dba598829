"""Usage and failure rows for ``app_logs``, written in batches off the call's path.

Every tool call leaves a row (who, what, which surface, how long, and for failures the error and
traceback). Writing it inside the call's own transaction cost each call a round trip and, for
reads, turned a read-only transaction into a write. Instead the dispatcher hands rows to this
recorder, which inserts them in one statement per batch: after ``FLUSH_SECONDS``, as soon as
``FLUSH_ROWS`` are waiting, and when the process closes. A crash (``kill -9``) can lose the rows
of at most the last ``FLUSH_SECONDS``; the notes, tasks and everything else a call changed are
committed before the call returns, as always. Rows of a failed flush are kept and retried, up
to ``MAX_PENDING`` of them (beyond that, when the database is gone for long, the oldest are
dropped with a warning rather than letting memory grow).

One user's row must never cost another user theirs: rows are made storable when recorded (a NUL
byte, which PostgreSQL text cannot hold, becomes U+FFFD; each value is cut to its column), and a
batch the database refuses as data (not for being down) is written again row by row, so only a
row that still fails is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from sqlalchemy import bindparam, insert, select
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from fable_core.db.database import Database
from fable_core.db.errors import log_once
from fable_core.db.models import AppLog, User

__all__ = ["UsageLog"]

FLUSH_SECONDS = 1.0
FLUSH_ROWS = 500
MAX_PENDING = 50_000
ATTEMPTS = 3  # a batch the database refuses this often is dropped, so one bad row cannot block the rest
_COLUMNS = ("created_at", "category", "username", "action", "surface", "duration_ms",
            "error_type", "error_message", "traceback", "method", "endpoint", "status_code")
# A user deleted between the call and the flush leaves user_id NULL (the username stays), as
# the foreign key's ON DELETE SET NULL does for rows written earlier.
_INSERT = insert(AppLog).values(
    user_id=select(User.id).where(User.id == bindparam("row_user_id")).scalar_subquery(),
    **{name: bindparam(name) for name in _COLUMNS},
)
_LIMITS = {"category": 16, "username": 64, "action": 100, "surface": 16, "error_type": 64,
           "error_message": 2000, "traceback": 20_000, "method": 8, "endpoint": 500}
_log = logging.getLogger(__name__)


def storable(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with every text value fit for its column: no NUL byte, no longer than allowed.
    Callers' input reaches these rows (an argument named in a validation error, say)."""
    out = dict(row)
    for key, limit in _LIMITS.items():
        value = out.get(key)
        if isinstance(value, str):
            out[key] = value.replace("\x00", "\ufffd")[:limit]
    return out


class UsageLog:
    """Buffers ``app_logs`` rows and writes them in batches; one per dispatcher."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._pending: list[dict[str, Any]] = []
        self._wake = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._closed = False
        self._failures = 0

    @property
    def pending(self) -> int:
        """Rows waiting to be written."""
        return len(self._pending)

    def record(self, row: dict[str, Any]) -> None:
        """Queue one row; never blocks the caller and never fails its call."""
        self._pending.append(storable(row))
        if len(self._pending) > MAX_PENDING:
            dropped = len(self._pending) - MAX_PENDING
            del self._pending[:dropped]
            _log.warning("app_logs: dropped %d usage rows the database did not take", dropped)
        if self._closed:
            return
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._run(), name="fable-usage-log")
        if len(self._pending) >= FLUSH_ROWS:
            self._wake.set()

    async def flush(self) -> None:
        """Write every queued row now (tests and shutdown call this)."""
        async with self._lock:
            while self._pending:
                batch, self._pending = self._pending[:FLUSH_ROWS], self._pending[FLUSH_ROWS:]
                params = [{"row_user_id": row.get("user_id"), **{c: row.get(c) for c in _COLUMNS}} for row in batch]
                try:
                    async with self._db.engine.begin() as conn:
                        await conn.execute(_INSERT, params)
                except DBAPIError as e:
                    if not _refused_as_data(e):
                        self._failed(batch)
                        raise
                    await self._one_by_one(params)
                except BaseException:
                    self._failed(batch)
                    raise
                self._failures = 0

    def _failed(self, batch: list[dict[str, Any]]) -> None:
        self._failures += 1
        if self._failures < ATTEMPTS:
            self._pending[:0] = batch  # keep them for the next attempt
        else:
            self._failures = 0
            _log.warning("app_logs: dropped %d usage rows after %d failed writes", len(batch), ATTEMPTS)

    async def _one_by_one(self, params: list[dict[str, Any]]) -> None:
        """Write a refused batch row by row, each in its own transaction; drop only the rows
        the database still refuses."""
        dropped = 0
        for one in params:
            try:
                async with self._db.engine.begin() as conn:
                    await conn.execute(_INSERT, [one])
            except DBAPIError as e:
                if not _refused_as_data(e):
                    raise
                dropped += 1
                _log.warning("app_logs: dropped a usage row the database refused (%s): action %r",
                             type(e.orig).__name__ if e.orig else type(e).__name__, one.get("action"))
        if dropped:
            _log.warning("app_logs: %d of %d rows of a batch were refused and dropped", dropped, len(params))


    async def close(self) -> None:
        """Stop the background writer and write what is left."""
        self._closed = True
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
        try:
            await self.flush()
        except (SQLAlchemyError, OSError):
            _log.warning("app_logs: could not write %d usage rows at close", len(self._pending),
                         exc_info=True)

    async def _run(self) -> None:
        while self._pending:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), FLUSH_SECONDS)
            self._wake.clear()
            try:
                await self.flush()
            except (SQLAlchemyError, OSError) as e:  # the database away: one line a minute while it is
                log_once(_log, logging.WARNING, f"app_logs: writing usage rows failed ({type(e).__name__}); will retry")


def _refused_as_data(e: DBAPIError) -> bool:
    """Whether the database refused the rows themselves (bad value, constraint: SQLSTATE
    classes 22 and 23), not the connection."""
    sqlstate = getattr(e.orig, "sqlstate", None) or getattr(getattr(e.orig, "__cause__", None), "sqlstate", None)
    return isinstance(sqlstate, str) and sqlstate[:2] in ("22", "23")
