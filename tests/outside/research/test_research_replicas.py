"""Research runs across replicas: a run started on one Fable process (the session's) is
followed, resumed and stopped through another on the same database, a second run cannot start
there, and a run whose process died ends for the other's followers."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text
from support.beats import server_up_for
from support.fake_llm import FakeLLM
from support.outside import Call
from support.pace import scaled
from support.research import QUESTION, Recorder, outlining, until

from fable_core.config import Settings
from fable_core.errors import Conflict
from fable_core.outside.research.runner import STALE_AFTER, generations, research_key
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


@pytest.fixture
async def other(outside_settings: Settings) -> AsyncIterator[Fable]:
    """A second replica on the test's database (its own generations and LISTEN connection)."""
    replica = await Fable.open(outside_settings, migrate=False)
    yield replica
    await replica.close()


async def test_followed_resumed_and_refused_through_another_replica(
        call: Call, alice: Caller, outside_fable: Fable, other: Fable, llm: FakeLLM,
        held: threading.Event) -> None:
    started = await call("research", question=QUESTION, wait=False)
    await until(outlining(llm))  # held
    assert generations(other).get(research_key(alice.user_id)) is None  # B reads PostgreSQL
    with pytest.raises(Conflict, match=f"research run {started['id']} is still running"):
        await other.call("research", {"question": "Something else", "wait": False}, alice)
    first = Recorder()
    follower = asyncio.ensure_future(other.dispatcher.call("follow_research", {"run_id": started["id"]}, alice,
                                                          progress=first))
    await until(lambda: "source" in first.kinds())  # live through B
    follower.cancel()
    seen = first.items[-1][1].id
    held.set()
    rest = Recorder()
    run = await other.dispatcher.call("follow_research", {"run_id": started["id"], "last_event_id": seen},
                                      alice, progress=rest)
    assert run["status"] == "done" and len(run["notes"]) == 3
    ids = [p.id for _, p in first.items] + [p.id for _, p in rest.items]
    assert ids == [f"{started['id']}:{n}" for n in range(1, len(ids) + 1)]  # no gap, no repeat
    assert rest.kinds()[-1] == "done"


async def test_stopped_through_another_replica(call: Call, alice: Caller, other: Fable, llm: FakeLLM,
                                               held: threading.Event) -> None:
    started = await call("research", question=QUESTION, wait=False)
    await until(outlining(llm))
    stopped = await other.call("stop_research", {"run_id": started["id"]}, alice)
    assert stopped["stopped"] is True and stopped["run"]["status"] == "stopped"
    held.set()
    assert (await call("list_notes"))["items"] == []  # nothing written


async def test_a_dead_process_run_ends_for_the_other_replica_follower(alice: Caller, outside_fable: Fable,
                                                                     other: Fable) -> None:
    """What a replica killed mid-run leaves: its run ``running`` and its generation claimed, both
    without a beat for a while, two events stored. A follower through another replica gets those
    events, then the run's end (``interrupted``, by the sweep it runs on seeing the dead beat)."""
    key = research_key(alice.user_id)
    await server_up_for(outside_fable.db, STALE_AFTER)
    async with outside_fable.db.transaction() as s:
        run_id = await s.scalar(text(
            "INSERT INTO research_runs (user_id, question, question_key, status, updated_at) "
            "VALUES (:user, :q, :q, 'running', now() - interval '1 minute') RETURNING id"),
            {"user": alice.user_id, "q": QUESTION})
        await s.execute(text("INSERT INTO generations (key, claim, message_id, owner, heartbeat) "
                             "VALUES (:key, 'dead.1', :run, :user, now() - interval '1 minute')"),
                        {"key": key, "run": run_id, "user": alice.user_id})
        await s.execute(text("INSERT INTO generation_events (key, message_id, seq, event, data) VALUES "
                             "(:key, :run, 1, 'status', '{\"stage\": \"searching\"}'), "
                             "(:key, :run, 2, 'query', '{\"query\": \"wild yeast\"}')"),
                        {"key": key, "run": run_id})
    got = Recorder()
    async with asyncio.timeout(scaled(10)):
        run = await other.dispatcher.call("follow_research", {"run_id": run_id}, alice, progress=got)
    assert [p.id for _, p in got.items] == [f"{run_id}:1", f"{run_id}:2"]
    assert run["status"] == "interrupted"
    async with outside_fable.db.transaction() as s:
        assert await s.scalar(text("SELECT count(*) FROM generations WHERE key = :key"), {"key": key}) == 0


async def test_a_run_whose_first_events_are_not_yet_stored_is_followed_not_ended(alice: Caller, outside_fable: Fable,
                                                                                 other: Fable) -> None:
    """A run's claim is written before its first events, and a run's process writes its events a
    moment after they happen (a loaded machine stretches that moment): a follower through another
    replica that finds the claim without its run yet follows it, rather than answering at once
    with a running run and no events (a flake once a session, when the flush lagged)."""
    key = research_key(alice.user_id)
    async with outside_fable.db.transaction() as s:
        run_id = await s.scalar(text(
            "INSERT INTO research_runs (user_id, question, question_key, status) "
            "VALUES (:user, :q, :q, 'running') RETURNING id"), {"user": alice.user_id, "q": QUESTION})
        await s.execute(text("INSERT INTO generations (key, claim, heartbeat) VALUES (:key, 'elsewhere.1', now())"),
                        {"key": key})
    got = Recorder()
    follower = asyncio.ensure_future(other.dispatcher.call("follow_research", {"run_id": run_id}, alice,
                                                           progress=got))
    await asyncio.sleep(0.3)  # the follower finds the bare claim (a buggy one has answered by now)
    async with outside_fable.db.transaction() as s:
        await s.execute(text("UPDATE generations SET message_id = :run, owner = :user, heartbeat = now(), done = true "
                             "WHERE key = :key"), {"key": key, "run": run_id, "user": alice.user_id})
        await s.execute(text("INSERT INTO generation_events (key, message_id, seq, event, data) VALUES "
                             "(:key, :run, 1, 'status', '{\"stage\": \"searching\"}')"), {"key": key, "run": run_id})
        await s.execute(text("UPDATE research_runs SET status = 'stopped' WHERE id = :run"), {"run": run_id})
    async with asyncio.timeout(scaled(10)):
        run = await follower
    assert [p.id for _, p in got.items] == [f"{run_id}:1"]
    assert run["status"] == "stopped"
