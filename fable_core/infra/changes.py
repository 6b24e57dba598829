"""Committed changes told to the other Fable processes on the same database (LISTEN/NOTIFY).

The in-process :class:`~fable_core.infra.events.EventBus` reaches the subscribers of the process that
made a change, and no others. A stdio ``fable mcp`` started by Claude Desktop and the ``fable
serve`` behind the web UI are two processes on one database: a client subscribed to a note in
one must hear that it changed in the other. So every process announces its committed events
on the channel :data:`CHANNEL`, and a process with subscribers of its own listens there.

Announcing is off the call's path and batched, every :data:`FLUSH_SECONDS`: PostgreSQL
serialises the commits of transactions that NOTIFY (about 0.3 ms per write transaction with
eight writers, measured here), so one NOTIFY per batch costs a busy writer next to nothing and
an idle process nothing. A crash loses at most the last batch's notices, never a change. Each
payload names its origin, so a process skips its own: its subscribers heard those in process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections.abc import Callable
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from fable_core.db.database import Database
from fable_core.db.errors import log_once
from fable_core.errors import FableError
from fable_core.infra.events import Event, EventBus, NoteChanged, ProjectChanged, Subscriber

__all__ = ["CHANNEL", "FLUSH_SECONDS", "ChangeFeed"]

CHANNEL = "fable_changes"
FLUSH_SECONDS = 0.05
_PER_PAYLOAD = 150  # events per NOTIFY: PostgreSQL refuses a payload of 8,000 bytes or more
_RETRY_SECONDS = 1.0
_KINDS: dict[str, type[NoteChanged | ProjectChanged]] = {"n": NoteChanged, "p": ProjectChanged}
_log = logging.getLogger(__name__)

class ChangeFeed:
    """One per :class:`~fable_core.runtime.Fable`: announces its events, hears the others'."""

    def __init__(self, db: Database, events: EventBus) -> None:
        self._db = db
        self.origin = secrets.token_hex(8)
        self._pending: list[Event] = []
        self._announcer: asyncio.Task[None] | None = None
        self._heard = EventBus()  # other processes' events, for this process's subscribers
        self._listener: asyncio.Task[None] | None = None
        self.listening = asyncio.Event()  # set while the LISTEN is in place
        self._closed = False
        events.subscribe(self._queue)

    # -- announcing -------------------------------------------------------------------------

    def _queue(self, event: Event) -> None:
        if self._closed:
            return
        self._pending.append(event)
        if self._announcer is None or self._announcer.done():
            self._announcer = asyncio.get_running_loop().create_task(self._announce(), name="fable-changes-out")

    async def _announce(self) -> None:
        while self._pending:
            await asyncio.sleep(FLUSH_SECONDS)
            await self.flush()

    async def flush(self) -> None:
        """Announce every queued event now (close calls this)."""
        batch, self._pending = self._pending, []
        try:
            async with self._db.reading() as session:  # autocommit: each NOTIFY goes out at once
                for payload in _payloads(self.origin, batch):
                    await session.execute(select(func.pg_notify(CHANNEL, payload)))
        except asyncio.CancelledError:  # closing mid-flush: close() announces them again
            self._pending[:0] = batch
            raise
        except (FableError, SQLAlchemyError, OSError) as e:  # the database is down or restarting
            _log.warning("could not tell other processes of %d changes: %s", len(batch), e)

    # -- listening --------------------------------------------------------------------------

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Hear the changes other processes commit; the first subscriber starts the listening."""
        unsubscribe = self._heard.subscribe(fn)
        if self._listener is None and not self._closed:
            self._listener = asyncio.get_running_loop().create_task(self._listen(), name="fable-changes-in")
        return unsubscribe

    async def _listen(self) -> None:
        """Hold one connection LISTENing on the channel, again after losing it."""
        while not self._closed:
            try:
                await self._listen_once()
            except (SQLAlchemyError, OSError) as e:  # the server away: one line a minute while it is
                detail = str(e).splitlines()[0][:200] if str(e) else ""
                log_once(_log, logging.WARNING,
                         f"listening for other processes' changes failed ({type(e).__name__}: {detail}); retrying")
            await asyncio.sleep(_RETRY_SECONDS)

    async def _listen_once(self) -> None:
        inbox: asyncio.Queue[str] = asyncio.Queue()
        lost = asyncio.Event()
        # A connection of its own, outside the pool: the pool's size is how many tool calls
        # run in the database at once, and this one is never free.
        engine = create_async_engine(self._db.url, poolclass=NullPool)
        try:
            await self._listen_on(engine, inbox, lost)
        finally:
            await engine.dispose()

    async def _listen_on(self, engine: AsyncEngine, inbox: asyncio.Queue[str], lost: asyncio.Event) -> None:
        async with engine.connect() as conn:
            raw: Any = (await conn.get_raw_connection()).driver_connection
            try:
                raw.add_termination_listener(lambda _: lost.set())
                await raw.add_listener(CHANNEL, lambda *args: inbox.put_nowait(args[-1]))
                self.listening.set()
                waiting_lost = asyncio.ensure_future(lost.wait())
                getting: asyncio.Future[str] | None = None
                try:
                    while True:
                        getting = asyncio.ensure_future(inbox.get())
                        done, _ = await asyncio.wait({getting, waiting_lost}, return_when=asyncio.FIRST_COMPLETED)
                        if getting not in done:
                            return
                        await self._deliver(getting.result())
                finally:  # also when closing cancels us: no waiter outlives the listener
                    waiting_lost.cancel()
                    if getting is not None:
                        getting.cancel()
            finally:
                self.listening.clear()

    async def _deliver(self, payload: str) -> None:
        try:
            origin, events = _decode(payload)
        except (ValueError, KeyError, TypeError):
            _log.warning("ignoring a malformed change notice %r", payload[:200])
            return
        if origin != self.origin:
            await self._heard.publish(events)

    async def close(self) -> None:
        self._closed = True
        for task in (self._announcer, self._listener):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self._pending:
            await self.flush()


def _payloads(origin: str, events: list[Event]) -> list[str]:
    """The events as JSON payloads, ``{"o": origin, "e": [[kind, user, id, change], ...]}``; at
    most :data:`_PER_PAYLOAD` rows of about 40 bytes each keep one under PostgreSQL's limit."""
    rows = [["n" if isinstance(e, NoteChanged) else "p", e.user_id,
             e.note_id if isinstance(e, NoteChanged) else e.project_id, e.kind] for e in events]
    return [json.dumps({"o": origin, "e": rows[i:i + _PER_PAYLOAD]}, separators=(",", ":"))
            for i in range(0, len(rows), _PER_PAYLOAD)]


def _decode(payload: str) -> tuple[str, list[Event]]:
    data = json.loads(payload)
    return data["o"], [_KINDS[kind](user_id, row_id, change) for kind, user_id, row_id, change in data["e"]]
