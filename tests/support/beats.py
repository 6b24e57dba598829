"""Heartbeats older than a bound, in tests.

A heartbeat's age is counted from the database server's start at the earliest
(:func:`~fable_core.infra.generations.beat_stale`: nobody could beat while it was down), and the
suite's server starts with the session. A test that writes a beat "a minute ago" to see it judged
dead first waits, with :func:`server_up_for`, until the server has been up longer than the bound
it judges by: only the session's first seconds ever wait.
"""

from __future__ import annotations

import asyncio

from sqlalchemy import text

from fable_core.db.database import Database

__all__ = ["server_up_for"]


async def server_up_for(db: Database, seconds: float) -> None:
    """Return once ``db``'s server has been up for ``seconds`` (and a little)."""
    async with db.reading() as s:
        up = float(await s.scalar(text("SELECT extract(epoch FROM now() - pg_postmaster_start_time())")) or 0)
    if up < seconds + 0.5:
        await asyncio.sleep(seconds + 0.5 - up)
