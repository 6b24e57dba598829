"""A real streaming replica of the test worker's PostgreSQL (``bench.harness.standby``: made with the
embedded server's own ``pg_basebackup -R -X stream``), and Fables reading from it
(``DATABASE_READ_URL``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from support.fables import fable_with

import bench.harness.standby
from bench.harness.standby import StreamingReplica
from fable_core.config import Settings
from fable_core.runtime import Fable


@pytest.fixture(scope="module")
async def streaming_replica(database_url: str) -> AsyncIterator[StreamingReplica]:
    async with bench.harness.standby.streaming_replica(database_url) as replica:
        yield replica


@pytest.fixture(scope="module")
async def read_fable(settings: Settings, streaming_replica: StreamingReplica) -> AsyncIterator[Fable]:
    """A Fable whose reads may go to the replica: one more process of the deployment, beside the
    tests' own ``fable`` (which has no replica)."""
    async with fable_with(settings, database_read_url=streaming_replica.url,
                          fable_read_your_writes_seconds=10) as app:
        yield app


@pytest.fixture(scope="module")
async def other_fable(settings: Settings, streaming_replica: StreamingReplica) -> AsyncIterator[Fable]:
    """Another Fable process reading from the same replica: what a second replica of the app
    behind a load balancer knows (nothing of ``read_fable``'s memory)."""
    async with fable_with(settings, database_read_url=streaming_replica.url,
                          fable_read_your_writes_seconds=10) as app:
        yield app


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

