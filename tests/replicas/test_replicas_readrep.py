"""Read replicas behind a load balancer: two ``fable serve`` processes reading from a real
streaming replica (``DATABASE_READ_URL``), requests alternating between them. With the replica's
replay paused, a caller's read right after their own write, answered by the *other* app replica,
still sees the write (read-your-writes across app replicas, from the primary's ``recent_writes``),
while another user's reads are served by the replica (they do not see a row it has not replayed)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from support.mcp_clients import make_key
from support.pace import scaled

from bench.harness.standby import StreamingReplica, streaming_replica
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


@pytest.fixture
async def standby(database_url: str) -> AsyncIterator[StreamingReplica]:
    async with streaming_replica(database_url) as replica:
        yield replica


async def test_reads_go_to_the_replica_but_never_hide_a_callers_own_write(
        cluster: Any, standby: StreamingReplica, fable: Fable, alice: Caller, bob: Caller) -> None:
    alice_key, bob_key = await make_key(fable, alice), await make_key(fable, bob)
    async with cluster(2, DATABASE_READ_URL=standby.url, FABLE_READ_YOUR_WRITES_SECONDS="30") as c:
        await standby.pause()
        as_alice = {"authorization": f"Bearer {alice_key}"}
        async with httpx.AsyncClient(base_url=c.url, timeout=scaled(10)) as client:
            written = await client.post("/api/notes", json={"title": "Written just now"}, headers=as_alice)
            assert written.status_code == 200, written.text
            note = written.json()["id"]
            read = await client.get(f"/api/notes/{note}", headers=as_alice)
            assert read.status_code == 200 and read.json()["title"] == "Written just now"
            # the write and the read were answered by different app replicas
            assert c.proxy.upstream_of("POST", "/api/notes") != c.proxy.upstream_of("GET", f"/api/notes/{note}")

            await fable.call("create_note", {"title": "Bob's, not replayed yet"}, bob)  # straight to the primary
            as_bob = {"authorization": f"Bearer {bob_key}"}
            for _ in range(2):  # through both app replicas: the replica answers, without the new row
                listed = await client.get("/api/notes", headers=as_bob)
                assert listed.status_code == 200 and listed.json()["items"] == []
            await standby.resume()
            await standby.caught_up()
            listed = await client.get("/api/notes", headers=as_bob)
            assert [n["title"] for n in listed.json()["items"]] == ["Bob's, not replayed yet"]
