"""The streaming replica the read-replica tests start: see ``conftest.py``."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from fable_core.db.embedded import _import_pgserver

__all__ = ["StreamingReplica", "pg_bin", "run"]


def pg_bin(name: str) -> str:
    pgserver, _ = _import_pgserver()
    return str(Path(pgserver.__file__).parent / "pginstall" / "bin" / name)


def run(*command: str) -> None:
    """Run one of the server's programs; PostgreSQL refuses to run as root, so as root it runs
    as pgserver's user, as the embedded server does."""
    subprocess.run(command, check=True, capture_output=True, timeout=120,
                   user="pgserver" if os.geteuid() == 0 else None)


@dataclass
class StreamingReplica:
    data: Path
    port: int
    url: str  # asyncpg URL of the replica's copy of the test database
    engine: AsyncEngine  # a superuser connection to the replica, for the test's own checks
    primary: AsyncEngine

    async def _ctl(self, *args: str) -> None:
        await asyncio.to_thread(run, pg_bin("pg_ctl"), "-D", str(self.data), *args)

    async def start(self) -> None:
        await self._ctl("-w", "-l", str(self.data / "replica.log"),
                  "-o", f"-h '' -k {self.data} -p {self.port} -c fsync=off", "start")

    async def stop(self) -> None:
        await self._ctl("-m", "immediate", "-w", "stop")

    @property
    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    async def sql(self, query: str) -> object:
        async with self.engine.connect() as conn:
            return (await conn.execute(text(query))).scalar()

    async def caught_up(self, within: float = 10) -> None:
        """Wait until the replica has replayed everything the primary has written so far."""
        async with self.primary.connect() as conn:
            target = (await conn.execute(text("SELECT pg_current_wal_lsn()::text"))).scalar()
        deadline = time.monotonic() + within
        while not await self.sql(f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn"):
            assert time.monotonic() < deadline, "the replica did not catch up"
            await asyncio.sleep(0.01)

    async def pause(self) -> None:
        await self.caught_up()
        await self.sql("SELECT pg_wal_replay_pause()")

    async def resume(self) -> None:
        await self.sql("SELECT pg_wal_replay_resume()")
