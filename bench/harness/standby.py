"""A streaming replica (hot standby) of an embedded PostgreSQL, made with the embedded server's
own binaries: for the read-replica tests (``tests/readrep``) and bench (``bench.readrep``).

    async with streaming_replica(primary_url) as replica:   # pg_basebackup -R -X stream, started
        ...  # replica.url is DATABASE_READ_URL; pause(), resume(), caught_up(), stop(), start()

The embedded server already allows it (``wal_level=replica``, ``max_wal_senders=10`` and
initdb's ``local replication all trust`` line in pg_hba.conf): nothing of the primary is
changed. The replica listens only on a Unix socket in its own directory, under a free port
number (which names the socket file, and keeps clear of the primary's copied lock file); it
runs with ``fsync=off`` (a throwaway copy). As root, its programs run as the embedded server's
system user, as the embedded server does (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from fable_core.db.embedded import program, server_user

__all__ = ["StreamingReplica", "pg_bin", "streaming_replica"]


def pg_bin(name: str) -> str:
    """A program of the embedded server's PostgreSQL (``pg_basebackup``, ``pg_ctl``)."""
    return str(program(name))


def _run(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True, timeout=120, user=server_user())


def _data_dir(root: Path) -> Path:
    data = root / "data"
    data.mkdir(mode=0o700)
    user = server_user()
    if user is not None:  # the server's user owns it
        account = pwd.getpwnam(user)
        os.chown(data, account.pw_uid, account.pw_gid)
        root.chmod(0o755)
    return data


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class StreamingReplica:
    data: Path
    port: int
    url: str  # asyncpg URL of the replica's copy of the primary's database
    engine: AsyncEngine  # a superuser connection to the replica (no pool: it may be stopped)
    primary: AsyncEngine

    @classmethod
    async def create(cls, primary_url: str, root: Path) -> StreamingReplica:
        """Back the primary (an embedded server's URL) up into ``root/data`` and start it there as
        a streaming replica, caught up."""
        data = _data_dir(root)
        primary = make_url(primary_url)
        await asyncio.to_thread(_run, pg_bin("pg_basebackup"), "-h", str(primary.query["host"]), "-U", "postgres",
                                "-D", str(data), "-R", "-X", "stream", "-c", "fast", "--no-sync")
        port = _free_port()
        url = primary.update_query_dict({"host": str(data), "port": str(port)}).render_as_string(hide_password=False)
        replica = cls(data, port, url, create_async_engine(url, poolclass=NullPool), create_async_engine(primary_url))
        try:
            await replica.start()
            await replica.caught_up()
        except BaseException:
            await replica.close()
            raise
        return replica

    async def _ctl(self, *args: str) -> None:
        await asyncio.to_thread(_run, pg_bin("pg_ctl"), "-D", str(self.data), *args)

    async def start(self) -> None:
        await self._ctl("-w", "-l", str(self.data / "replica.log"),
                        "-o", f"-h '' -k {self.data} -p {self.port} -c fsync=off", "start")

    async def stop(self) -> None:
        await self._ctl("-m", "immediate", "-w", "stop")

    async def close(self) -> None:
        await self.engine.dispose()
        await self.primary.dispose()
        if self.running:
            await self.stop()

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
            if time.monotonic() > deadline:
                raise TimeoutError(f"the replica did not catch up within {within} s")
            await asyncio.sleep(0.01)

    async def pause(self) -> None:
        """Caught up, then replaying nothing more until :meth:`resume`."""
        await self.caught_up()
        await self.sql("SELECT pg_wal_replay_pause()")

    async def resume(self) -> None:
        await self.sql("SELECT pg_wal_replay_resume()")


@asynccontextmanager
async def streaming_replica(primary_url: str) -> AsyncIterator[StreamingReplica]:
    """A replica of ``primary_url`` in a new temporary directory (under the system's: one the
    server's user may enter, outside pytest's base temp), stopped and removed at the end."""
    root = Path(tempfile.mkdtemp(prefix="fable-replica-"))
    try:
        replica = await StreamingReplica.create(primary_url, root)
        try:
            yield replica
        finally:
            await replica.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
