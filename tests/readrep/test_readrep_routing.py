"""Read replicas on a real streaming replica (``conftest.py``): which reads it answers.

With the replica's replay paused, a row changed directly on the primary tells the two apart:
a read that sees the old value ran on the replica, one that sees the new value on the primary.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from bench.harness.machine import record
from bench.harness.memory import PeakMemory
from bench.harness.standby import StreamingReplica
from bench.readrep import _world, figures, render, run
from fable_core.config import Settings
from fable_core.errors import NotFound
from fable_core.identity.accounts import create_api_key
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app


def person(caller: Caller) -> Caller:
    """``caller`` calling over MCP: the test users are ``internal`` callers (background work),
    whose reads never go to the replica."""
    return replace(caller, surface="mcp")


async def note_of(fable: Fable, caller: Caller, title: str) -> int:
    created = await fable.call("create_note", {"title": title, "body": "b"}, caller)
    return int(created["id"])


async def change_on_primary(fable: Fable, note_id: int, title: str) -> None:
    """A change the replica has not replayed (while paused): straight on the primary."""
    async with fable.db.transaction() as session:
        await session.execute(text("UPDATE notes SET title = :t WHERE id = :id"), {"t": title, "id": note_id})


async def health(fable: Fable) -> httpx.Response:
    transport = httpx.ASGITransport(app=create_app(fable))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
        return await c.get("/api/health")


async def title(fable: Fable, caller: Caller, note_id: int) -> str:
    return str((await fable.call("read_note", {"note_id": note_id}, caller))["title"])


async def test_readrep_reads_on_the_replica_writes_on_the_primary_and_a_writer_reads_its_writes(
    fable: Fable, read_fable: Fable, other_fable: Fable, replica: StreamingReplica, alice: Caller, bob: Caller,
) -> None:
    assert read_fable.db.replica is not None
    alices = await note_of(fable, alice, "Alice's note")
    bobs = await note_of(fable, bob, "Bob's note")
    await replica.pause()
    await change_on_primary(fable, alices, "Changed on the primary")
    await change_on_primary(fable, bobs, "Bob's, changed on the primary")
    assert await replica.sql("SELECT pg_is_in_recovery()") is True

    before = dict(read_fable.db.replica.routed)
    assert await title(read_fable, person(alice), alices) == "Alice's note"  # the replica: not replayed yet
    assert read_fable.db.replica.routed["replica"] == before["replica"] + 1
    # background work (an internal caller) reads on the primary, and so does a live stream
    routed = dict(read_fable.db.replica.routed)
    assert await title(read_fable, alice, alices) == "Changed on the primary"
    with pytest.raises(NotFound):
        await read_fable.call("follow_research", {"run_id": 10**6}, person(alice))
    assert read_fable.db.replica.routed == routed

    # a write goes to the primary (the replica would refuse it: read-only)
    await read_fable.call("update_note", {"note_id": alices, "title": "Written by alice"}, person(alice))
    # ... and its writer's reads follow it there, in this process and in any other one
    assert await title(read_fable, person(alice), alices) == "Written by alice"
    assert await title(other_fable, person(alice), alices) == "Written by alice"
    # another user's reads in alice's window still go to the replica
    assert await title(other_fable, person(bob), bobs) == "Bob's note"
    assert await title(read_fable, person(bob), bobs) == "Bob's note"

    await replica.resume()
    await replica.caught_up()
    assert await title(other_fable, person(bob), bobs) == "Bob's, changed on the primary"


async def test_readrep_a_lagging_or_stopped_replica_leaves_reads_to_the_primary(
    fable: Fable, read_fable: Fable, replica: StreamingReplica, alice: Caller, monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert read_fable.db.replica is not None
    note = await note_of(fable, alice, "Before")
    await replica.pause()
    await change_on_primary(fable, note, "Lagging behind this")
    assert await title(read_fable, person(alice), note) == "Before"  # a moment behind: fine
    # the replica's last replayed commit grows older than half the window: too far behind
    monkeypatch.setattr(read_fable.db.replica, "window", 0.2)
    await asyncio.sleep(0.15)
    assert await title(read_fable, person(alice), note) == "Lagging behind this"
    monkeypatch.undo()
    await replica.resume()
    await replica.caught_up()
    assert await title(read_fable, person(alice), note) == "Lagging behind this"  # on the replica again

    await replica.stop()
    await change_on_primary(fable, note, "While the replica is down")
    started = time.monotonic()
    routed = dict(read_fable.db.replica.routed)
    assert await title(read_fable, person(alice), note) == "While the replica is down"
    assert await title(read_fable, person(alice), note) == "While the replica is down"
    assert read_fable.db.replica.routed == {**routed, "primary": routed["primary"] + 2}
    assert read_fable.db.replica._down_until > time.monotonic()  # no retry per call for a while
    assert time.monotonic() - started < 2
    answer = await health(read_fable)  # still up: the replica's state is information
    assert answer.status_code == 200 and answer.json()["read_replica"]["status"] == "unavailable"



async def test_readrep_a_read_that_fails_on_the_replica_is_answered_by_the_primary(
    fable: Fable, settings: Settings, replica: StreamingReplica, alice: Caller,
) -> None:
    """The replica reached through a role that sees no tables (as a replica a schema change has
    not reached would): the probe passes, the tool's query fails there, the primary answers."""
    async with fable.db.engine.begin() as conn:
        await conn.execute(text("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'blind_reader') "
                                "THEN CREATE ROLE blind_reader LOGIN; END IF; END $$"))
        await conn.execute(text("ALTER ROLE blind_reader SET search_path = nowhere"))
    note = await note_of(fable, alice, "Answered anyway")
    await replica.caught_up()
    url = make_url(replica.url).set(username="blind_reader").render_as_string(hide_password=False)
    blind = await Fable.open(settings.model_copy(update={"database_read_url": url}), migrate=False)
    try:
        assert blind.db.replica is not None
        assert await title(blind, person(alice), note) == "Answered anyway"
        assert blind.db.replica.routed == {"replica": 1, "primary": 0, "failed": 1}
        assert await title(blind, person(alice), note) == "Answered anyway"  # the replica left alone a while
        assert blind.db.replica.routed == {"replica": 1, "primary": 1, "failed": 1}
    finally:
        await blind.close()


async def test_readrep_rest_signs_in_on_the_primary_and_reads_on_the_replica(
    fable: Fable, read_fable: Fable, replica: StreamingReplica, alice: Caller,
) -> None:
    note = await note_of(fable, alice, "Seen over REST")
    await replica.pause()
    async with fable.db.transaction() as session:  # a key the replica has not replayed
        _, key = await create_api_key(session, alice.user_id, "replica test")
    await change_on_primary(fable, note, "Changed after")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(read_fable)),
                                 base_url="http://localhost/api", headers={"Authorization": f"Bearer {key}"}) as http:
        got = await http.get(f"/notes/{note}")
        assert got.status_code == 200, got.text
        assert got.json()["title"] == "Seen over REST"  # the key looked up on the primary, the note read on the replica
        assert (await http.patch(f"/notes/{note}", json={"title": "Patched over REST"})).status_code == 200
        assert (await http.get(f"/notes/{note}")).json()["title"] == "Patched over REST"
    answer = (await health(read_fable)).json()
    assert answer["read_replica"]["status"] == "ok" and answer["read_replica"]["last_replayed_commit_seconds"] >= 0
    assert "read_replica" not in (await health(fable)).json()  # none configured: nothing said


async def test_readrep_the_bench_runs_end_to_end_on_a_small_world(
    fable: Fable, read_fable: Fable, replica: StreamingReplica,
) -> None:
    me, ids = await _world(fable, 30)
    await replica.caught_up()
    result = await run(fable, read_fable, me, ids, runs=2, warmup=1)
    assert result.notes == 30 and all(len(samples) == 2 for samples in result.calls.values())
    assert result.routed == {"replica": 6, "primary": 6, "failed": 0}  # routed reads; those after a write elsewhere
    assert "| read_note, routed to the replica | 2 |" in render(result, record(), PeakMemory({}))
    assert figures(result)
