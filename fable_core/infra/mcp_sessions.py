"""Which replica holds which 2025 MCP session: the ``mcp_sessions`` registry in PostgreSQL.

The surface (:mod:`fable_mcp.session_routes`) registers the sessions its replica opens, looks up
the owner of one it does not hold, and removes its rows when sessions end or the replica stops.
Only a SHA-256 of each session id is stored, never the id (it is the session's capability).
Each replica beats its rows every :data:`BEAT` seconds (and drops any of its own it no longer
holds); rows not beaten for :data:`STALE` seconds belong to a replica that died without
cleaning up: they are ignored and pruned.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects.postgresql import insert

from fable_core.db.database import Database
from fable_core.db.models import McpSession

__all__ = ["BEAT", "STALE", "SessionRegistry"]

BEAT = 30.0  # seconds between a replica's heartbeats on its rows
STALE = 3 * BEAT  # a row not beaten for this long belongs to a replica that is gone


def _hash(session: str) -> str:
    return hashlib.sha256(session.encode()).hexdigest()


class SessionRegistry:
    """The ``mcp_sessions`` rows of one replica, and look-ups of everyone's."""

    def __init__(self, db: Database, replica: str) -> None:
        self.db = db
        self.replica = replica.rstrip("/")

    async def register(self, session: str, key: str) -> None:
        async with self.db.transaction() as s:
            await s.execute(insert(McpSession).values(id_hash=_hash(session), replica=self.replica, key_hash=key)
                            .on_conflict_do_nothing())

    async def forget(self, session: str) -> None:
        async with self.db.transaction() as s:
            await s.execute(delete(McpSession).where(McpSession.id_hash == _hash(session)))

    async def owner(self, session: str) -> McpSession | None:
        """The live row of ``session``; None if nobody holds it (or its holder stopped beating)."""
        async with self.db.reading() as s:
            return await s.scalar(select(McpSession).where(McpSession.id_hash == _hash(session),
                                                           McpSession.seen_at > _stale()))

    async def count(self, key: str) -> int:
        """Sessions open with ``key`` on every live replica."""
        async with self.db.reading() as s:
            return await s.scalar(select(func.count()).select_from(McpSession)
                                  .where(McpSession.key_hash == key, McpSession.seen_at > _stale())) or 0

    async def beat(self, held: Iterable[str]) -> None:
        """Keep the rows of the sessions this replica ``held`` fresh, drop its others (whose removal
        failed; a few seconds old at least, so that none being registered goes), and prune the rows
        of replicas that stopped beating."""
        hashes = [_hash(session) for session in held]
        mine = McpSession.replica == self.replica
        async with self.db.transaction() as s:
            await s.execute(update(McpSession).where(mine).values(seen_at=func.now()))
            await s.execute(delete(McpSession).where(mine, McpSession.id_hash.not_in(hashes),
                                                     McpSession.created_at < func.now() - timedelta(seconds=5)))
            await s.execute(delete(McpSession).where(McpSession.seen_at <= _stale()))

    async def drop_all(self) -> None:
        """Remove every row of this replica (it is starting, draining or stopping)."""
        async with self.db.transaction() as s:
            await s.execute(delete(McpSession).where(McpSession.replica == self.replica))


def _stale() -> Any:
    return func.now() - timedelta(seconds=STALE)
