"""An answer outlives a database outage longer than the stale bound (issue 36, item 2).

Two replicas (two runtimes in this process) share a throwaway PostgreSQL: A writes an answer,
B follows it and runs the sweeps as ``fable serve`` does. PostgreSQL is stopped for
:data:`OUTAGE` seconds (twice :data:`~fable_core.infra.generations.STALE_AFTER`) while the model
keeps streaming, then started again. A's answer is the writer's: it ends ``done`` with all its
text and no error; B neither marks it interrupted nor lets a second answer start in the
conversation while A holds it; B's follower rides the outage out and sees every event once."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import func, select, text
from support.beats import server_up_for
from support.chat import new_conversation
from support.fake_llm import FakeLLM, Reply
from support.pace import scaled
from support.pgcluster import throwaway_server
from support.users import make_user

from fable_core.assistant.sweeps import SWEEP
from fable_core.config import Settings
from fable_core.db.database import Database
from fable_core.db.models import GenerationEvent, Message
from fable_core.errors import Conflict, Unavailable
from fable_core.infra.generations import STALE_AFTER, StreamEvent, recover_interrupted
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.jobs import JOBS, Scheduler, run_job

OUTAGE = 2 * STALE_AFTER  # seconds PostgreSQL is down: 20, as the operator saw
WORDS = [f"word{i}" for i in range(60)]
BEFORE = 20  # words streamed before the outage


async def _collect(events: AsyncIterator[StreamEvent], seen: list[StreamEvent]) -> list[StreamEvent]:
    async for event in events:
        if event.event != "ping":
            seen.append(event)  # noqa: PERF401 - the test watches the list grow
    return seen


async def _until(check: object, what: str, within: float = 30.0) -> None:
    within = scaled(within)
    deadline = time.monotonic() + within
    while not await check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {within:g} s")
        await asyncio.sleep(0.05)


@pytest.mark.slow
async def test_an_answer_written_through_a_20_s_postgresql_outage_ends_done_on_every_replica(
    ai_settings: Settings, fake: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with throwaway_server() as server:
        settings = ai_settings.model_copy(update={"database_url": server.url})
        a, b = await Fable.open(settings), await Fable.open(settings)
        sweeps = Scheduler(b, {name: j for name, j in JOBS.items() if j.wake == SWEEP})
        follower: asyncio.Task[list[StreamEvent]] | None = None
        try:
            alice = await make_user(a, "alice")
            conv = int((await a.call("create_conversation", {}, alice))["id"])
            rest = threading.Event()
            fake.replies.append(Reply(" ".join(WORDS), delay=0.02, pause=(BEFORE, rest)))
            await a.assistant.send(alice, conv, "a long one")

            async def stored_events() -> bool:
                async with b.db.reading() as s:
                    return (await s.scalar(select(func.count()).select_from(GenerationEvent))) >= BEFORE

            await _until(stored_events, "the first words stored for other replicas")
            following: list[StreamEvent] = []
            follower = asyncio.create_task(_collect(b.assistant.follow(alice, conv, heartbeat=1.0), following))

            async def followed() -> bool:
                return len(following) >= BEFORE

            await _until(followed, "B's follower reading the stored words")
            sweeps.start()
            await asyncio.to_thread(server.stop)
            stopped = time.monotonic()
            rest.set()  # the model goes on: the rest of the answer is written while the database is down
            await asyncio.sleep(OUTAGE - (time.monotonic() - stopped))
            await asyncio.to_thread(server.start)

            async def refused_on_b() -> bool:  # its pooled connections died with the server: the first try may say so
                try:
                    await b.assistant.send(alice, conv, "a second answer at once")
                except Unavailable:
                    return False
                except Conflict:
                    return True
                raise AssertionError("B started a second answer while A still writes the first")

            await _until(refused_on_b, "B refusing a second answer")
            async def swept() -> bool:  # B's own schedule may hold the sweep's lock this moment
                return await run_job(b, "sweep_interrupted_answers")

            await _until(swept, "B sweeping as the database comes back")
            await asyncio.wait_for(a.assistant.wait(conv), scaled(60))
            seen = await asyncio.wait_for(follower, scaled(60))
            async with b.db.reading() as s:
                content, status, error = (await s.execute(select(Message.content, Message.status, Message.error)
                                                          .where(Message.role == "assistant"))).one()
            assert (status, error, content) == ("done", None, " ".join(WORDS))
            seqs = [int(e.id.split(":")[1]) for e in seen]
            assert seqs == list(range(1, len(seen) + 1)), "B's follower saw every event once, in order"
            assert seen[-1].event == "done"
            assert "".join(e.data["text"] for e in seen if e.event == "token") == " ".join(WORDS)
            # what the outage logged: a line per kind of failure, no traceback (768 of them, 3.3 MB, before)
            # (Fable's own loggers: the test's fake model server may log a client that went away)
            tracebacks = [f"{r.name}: {r.getMessage()}" for r in caplog.records
                          if r.exc_info and r.name.startswith("fable")]
            assert tracebacks == []
            said = [r.getMessage() for r in caplog.records
                    if r.name.startswith("fable") and r.levelno >= logging.WARNING]
            assert len(said) < 30, said
        finally:
            if follower is not None:
                follower.cancel()
            await sweeps.close()
            await a.close()
            await b.close()


async def test_a_process_that_lost_the_database_waits_a_stale_bound_before_judging_anyone_s_beat(
    ai_fable: Fable, ai_settings: Settings, alice: Caller
) -> None:
    """An outage need not be a restart (a network cut, a proxy, a pooler): the server's start
    then says nothing, but the judging process saw its connection go. Until it has reached the
    database for a whole stale bound since, the beats it finds old may be the outage's: it marks
    nothing. A process that lost nothing judges the same row at once."""
    conv = await new_conversation(ai_fable, alice)
    await server_up_for(ai_fable.db, STALE_AFTER)
    async with ai_fable.db.transaction() as s:
        await s.execute(text(
            "INSERT INTO messages (conversation_id, user_id, role, content, status, updated_at) "
            "VALUES (:c, :u, 'assistant', 'beat 20 s ago', 'generating', now() - interval '20 seconds')"),
            {"c": conv, "u": alice.user_id})
    judge = await Database.open(ai_settings, migrate=False, check=False)
    try:
        async with judge.reading() as s:  # its one pooled connection, which the cut ends
            backend = await s.scalar(text("SELECT pg_backend_pid()"))
        async with ai_fable.db.transaction() as s:
            assert await s.scalar(text("SELECT pg_terminate_backend(:p)"), {"p": backend})
        with pytest.raises(Unavailable):
            await recover_interrupted(judge)
        assert judge.reached_for() < STALE_AFTER
        assert await recover_interrupted(judge) == 0, "a beat the judge could not have seen is not a death"
        async with ai_fable.db.reading() as s:
            assert await s.scalar(select(Message.status).where(Message.conversation_id == conv,
                                                                 Message.role == "assistant")) == "generating"
        assert await recover_interrupted(ai_fable.db) == 1, "a process that lost nothing judges it dead"
    finally:
        await judge.close()
