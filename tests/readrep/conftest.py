"""A real streaming replica of the test worker's PostgreSQL, made with the embedded server's own
binaries (``pg_basebackup -R -X stream``), and a Fable reading from it (``DATABASE_READ_URL``).

The embedded server already allows it (``wal_level=replica``, ``max_wal_senders=10`` and
initdb's ``local replication all trust`` line in pg_hba.conf): nothing of the primary is
changed. The replica listens only on a Unix socket in its own directory, under a free port
number (that names the socket file; it also keeps clear of the primary's copied lock file).
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from readrep_support import StreamingReplica, pg_bin, run
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool
from support.servers import free_port

from fable_core.config import Settings
from fable_core.runtime import Fable


@pytest.fixture(scope="module")
def replica_dir() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="fable-test-replica-"))  # outside basetemp: see tests/conftest.py
    data = root / "data"
    data.mkdir(mode=0o700)
    if os.geteuid() == 0:
        account = pwd.getpwnam("pgserver")
        os.chown(data, account.pw_uid, account.pw_gid)
        root.chmod(0o755)
    yield data
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
async def streaming_replica(database_url: str, replica_dir: Path) -> AsyncIterator[StreamingReplica]:
    primary_url = make_url(database_url)
    await asyncio.to_thread(run, pg_bin("pg_basebackup"), "-h", str(primary_url.query["host"]), "-U", "postgres",
                            "-D", str(replica_dir), "-R", "-X", "stream", "-c", "fast", "--no-sync")
    port = free_port()
    url = primary_url.update_query_dict({"host": str(replica_dir), "port": str(port)})
    rendered = url.render_as_string(hide_password=False)
    replica = StreamingReplica(replica_dir, port, rendered, create_async_engine(rendered, poolclass=NullPool),
                               create_async_engine(database_url))
    await replica.start()
    try:
        await replica.caught_up()
        yield replica
    finally:
        await replica.engine.dispose()
        await replica.primary.dispose()
        if replica.running:
            await replica.stop()


@pytest.fixture(scope="module")
async def read_fable(settings: Settings, streaming_replica: StreamingReplica) -> AsyncIterator[Fable]:
    """A Fable whose reads may go to the replica: one more process of the deployment, beside the
    tests' own ``fable`` (which has no replica)."""
    app = await Fable.open(settings.model_copy(update={
        "database_read_url": streaming_replica.url, "fable_read_your_writes_seconds": 10}))
    yield app
    await app.close()


@pytest.fixture(scope="module")
async def other_fable(settings: Settings, streaming_replica: StreamingReplica) -> AsyncIterator[Fable]:
    """Another Fable process reading from the same replica: what a second replica of the app
    behind a load balancer knows (nothing of ``read_fable``'s memory)."""
    app = await Fable.open(settings.model_copy(update={
        "database_read_url": streaming_replica.url, "fable_read_your_writes_seconds": 10}))
    yield app
    await app.close()


@pytest.fixture
async def replica(
    streaming_replica: StreamingReplica, read_fable: Fable, other_fable: Fable,
) -> AsyncIterator[StreamingReplica]:
    """The replica, running, replaying and caught up at the start of the test, whatever the one
    before did with it."""
    if not streaming_replica.running:
        await streaming_replica.start()
    await streaming_replica.resume()
    await streaming_replica.caught_up()
    for app in (read_fable, other_fable):  # what they remember of the test before (its users had these ids)
        assert app.db.replica is not None
        app.db.replica._wrote.clear()
        app.db.replica._down_until = 0.0
    yield streaming_replica
    if streaming_replica.running:
        await streaming_replica.resume()

