"""Planner statistics after bulk loads: the note tables are analysed once many notes arrived.

PostgreSQL's autovacuum analyses a table when a tenth of it changed, but only when it next
looks (every minute, one database at a time), so after ``import_notes`` loads thousands of
notes in seconds the planner works from statistics of a table a fraction of the size, for
minutes. :class:`BulkAnalyser` counts the notes this process created (the ``created`` events
the dispatcher publishes after each commit, so a rolled-back batch counts nothing); when they
reach a tenth of the ``notes`` table as last analysed (and at least :data:`MIN_ROWS`), it runs
``ANALYZE`` on ``notes``, ``note_versions`` and ``note_links`` in the background, never on the
call's path. A small call only adds to the count (at 100k notes, 10,000 new notes set off one
analyse); at most one runs at a time, and the batches that commit while it waits
(:data:`DELAY`) share it. Closing the runtime finishes a due analyse first,
so a one-shot ``fable call import_notes`` leaves the tables analysed too.

Each process counts its own notes: two loaders against one database each analyse when their
own share is due, which is early rather than late.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from sqlalchemy import text

from fable_core.db.database import Database
from fable_core.infra.events import Event, EventBus, NoteChanged

if TYPE_CHECKING:
    from fable_core.tools.runtime import Closer, Runtime

__all__ = ["DELAY", "FRACTION", "MIN_ROWS", "TABLES", "BulkAnalyser", "install"]

TABLES = ("notes", "note_versions", "note_links")
MIN_ROWS = 500  # one full import_notes batch
FRACTION = 0.1  # of the table's rows at its last analyse: autovacuum's own default
DELAY = 0.5  # seconds an analyse waits, so that the batches of one load in flight share it

_log = logging.getLogger(__name__)
_ROWS = text("SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = 'notes'::regclass")
_ANALYZE = text(f"ANALYZE {', '.join(TABLES)}")


class BulkAnalyser:
    """Analyses the note tables in the background when enough notes were created (module doc)."""

    def __init__(self, db: Database, events: EventBus, *, delay: float = DELAY) -> None:
        self._db = db
        self._delay = delay
        self.pending = 0  # notes created by this process since the tables were last analysed
        self._due = MIN_ROWS  # the count that sets off a look at the table (its size then decides)
        self._task: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._unsubscribe = events.subscribe(self._on_event)

    def _on_event(self, event: Event) -> None:
        if not (isinstance(event, NoteChanged) and event.kind == "created"):
            return
        self.pending += 1
        if self.pending >= self._due and self._task is None and not self._closing.is_set():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="fable-bulk-analyser")

    async def _run(self) -> None:
        try:
            while self.pending >= self._due:  # notes counted while it analysed may make it due again
                with contextlib.suppress(TimeoutError):  # the wait ends early when closing
                    await asyncio.wait_for(self._closing.wait(), self._delay)
                await self.analyse_if_due()
        except Exception:  # noqa: BLE001 - background work: autovacuum will catch up; log and go on
            _log.exception("analysing the note tables after a bulk load failed")
        finally:
            self._task = None

    async def analyse_if_due(self) -> bool:
        """ANALYZE the note tables if the notes counted reach a tenth of ``notes`` (at least
        :data:`MIN_ROWS`); returns whether it did. Either way the next look waits for a tenth of
        the table as it now stands."""
        counted = self.pending
        async with self._db.reading() as session:
            rows = float((await session.execute(_ROWS)).scalar_one())
            analysed = counted >= max(MIN_ROWS, FRACTION * rows)
            if analysed:
                await session.execute(_ANALYZE)
                rows = float((await session.execute(_ROWS)).scalar_one())
                self.pending -= counted
        self._due = max(MIN_ROWS, round(FRACTION * rows))
        return analysed

    async def close(self) -> None:
        """Stop counting; an analyse already due runs now (without its wait) and is awaited."""
        self._unsubscribe()
        self._closing.set()
        if self._task is not None:
            await self._task


async def install(fable: Runtime) -> Closer:
    """The knowledge capability's hook (:mod:`fable_core.capabilities`)."""
    return BulkAnalyser(fable.db, fable.events).close
