"""Generations outlive their followers: resume with Last-Event-ID without gap or repeat, many
followers at once, the stored message after the buffer is gone, and a crash mid-answer that
leaves the partial text in the database (the generating process is killed with SIGKILL)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from contextlib import aclosing
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select
from support.beats import server_up_for
from support.chat import new_conversation, text_of
from support.fake_llm import FakeLLM, Reply
from support.pace import scaled

from fable_core.assistant.service import Assistant
from fable_core.assistant.sweeps import EVERY, SWEEP
from fable_core.config import Settings
from fable_core.db.models import Message
from fable_core.infra.generations import STALE_AFTER, Buffer, Generations, MessageWriter, parse_event_id
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.jobs import JOBS, Scheduler, run_job

ANSWER = " ".join(f"token{i}" for i in range(120))


async def test_resume_with_last_event_id_has_no_gap_and_no_repeat(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    fake.replies.append(Reply(ANSWER, delay=0.002))
    await assistant.send(alice, conv, "count for me")
    first = []
    async with aclosing(assistant.follow(alice, conv)) as stream:
        async for event in stream:
            first.append(event)
            if len([e for e in first if e.event == "token"]) == 17:
                break  # the client disconnects mid-answer
    await asyncio.sleep(0.05)  # more tokens arrive while nobody listens
    rest = [e async for e in assistant.follow(alice, conv, last_event_id=first[-1].id)]
    events = first + rest
    assert text_of(events) == ANSWER
    numbers = [parse_event_id(e.id)[1] for e in events]
    assert numbers == list(range(1, len(events) + 1)), "consecutive ids: no gap, no repeat"
    assert events[-1].event == "done"


async def test_only_the_owner_follows_a_live_generation_and_not_once_deleted(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller, bob: Caller
) -> None:
    import pytest

    from fable_core.errors import NotFound

    conv = await new_conversation(ai_fable, alice)
    fake.replies.append(Reply(ANSWER, delay=0.01))
    await assistant.send(alice, conv, "count for me")
    with pytest.raises(NotFound):
        await anext(assistant.follow(bob, conv))
    assert (await anext(assistant.follow(alice, conv))).event == "context"
    await ai_fable.call("delete_conversation", {"conversation_id": conv}, alice)
    with pytest.raises(NotFound):
        await anext(assistant.follow(alice, conv))
    await assistant.wait(conv)


async def test_an_id_from_another_generation_replays_this_one_from_the_start(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    fake.replies.append(Reply("one two three"))
    await assistant.send(alice, conv, "go")
    events = [e async for e in assistant.follow(alice, conv, last_event_id="99999:3")]
    assert text_of(events) == "one two three"
    garbage = [e async for e in assistant.follow(alice, conv, last_event_id="not-an-id")]
    assert [e.id for e in garbage] == [e.id for e in events]


async def test_a_hundred_followers_see_every_event() -> None:
    generations = Generations(grace=0.5)
    words = [f"w{i} " for i in range(300)]

    async def runner(buffer: Buffer) -> None:
        for word in words:
            buffer.emit("token", {"text": word})
            if len(buffer.events) % 10 == 0:
                await asyncio.sleep(0)
        buffer.emit("done", {})

    async def follow(buffer: Buffer) -> str:
        return "".join([e.data.get("text", "") async for e in buffer.follow()])

    buffer = generations.start("chat:1", 7, runner)
    results = await asyncio.gather(*(follow(buffer) for _ in range(100)))
    assert set(results) == {"".join(words)}
    await generations.close()


async def test_after_the_grace_period_a_reconnect_gets_the_stored_message(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    fake.replies.append(Reply("kept for later"))
    assistant.generations.grace = 0.01
    try:
        await assistant.send(alice, conv, "remember this")
        await assistant.wait(conv)
        while assistant.generations.get(f"chat:{conv}") is not None:  # noqa: ASYNC110  nothing signals its end
            await asyncio.sleep(0.01)
    finally:
        assistant.generations.grace = 60.0
    [event] = [e async for e in assistant.follow(alice, conv, last_event_id="1:3")]
    assert event.event == "message"
    assert (event.data["content"], event.data["status"]) == ("kept for later", "done")


async def test_a_late_periodic_flush_never_overwrites_the_final_text(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    fake.replies.append(Reply("the final answer"))
    await assistant.send(alice, conv, "hello")
    await assistant.wait(conv)
    message = (await ai_fable.call("get_conversation", {"conversation_id": conv}, alice))
    message_id = message["messages"][-1]["id"]
    late = MessageWriter(ai_fable.db, message_id)
    late.content = "the fin"  # what a periodic flush read before the final flush ran
    await late.flush()
    async with ai_fable.db.transaction() as s:
        stored = await s.scalar(select(Message).where(Message.id == message_id))
    assert (stored.content, stored.status) == ("the final answer", "done")


CHILD = Path(__file__).with_name("generation_child.py")


async def test_a_crash_mid_generation_leaves_the_partial_answer(
    ai_fable: Fable, ai_settings: Settings, fake: FakeLLM, alice: Caller
) -> None:
    conv = await new_conversation(ai_fable, alice)
    answer = " ".join(f"part{i}" for i in range(400))
    fake.replies.append(Reply(answer, delay=0.01))
    env = _child_env(ai_settings)
    content = await _kill_mid_answer(ai_fable, env, alice, conv)
    restarted = await asyncio.create_subprocess_exec(
        sys.executable, str(CHILD), "restart", str(alice.user_id), str(conv), env=env,
        stdout=asyncio.subprocess.PIPE)
    out, _ = await asyncio.wait_for(restarted.communicate(), scaled(60))
    assert restarted.returncode == 0
    stored = json.loads(out.decode().strip().splitlines()[-1])
    assert stored["event"] == "message" and stored["status"] == "interrupted"
    assert answer.startswith(stored["content"]) and len(stored["content"]) >= len(content) > 0
    assert stored["content"] != answer, "it really was cut off"


def _child_env(settings: Settings) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": settings.database_url or "", "OLLAMA_URL": settings.ollama_url,
            "LLM_PROVIDER": "ollama", "EMBED_MODEL": settings.embed_model,
            "FABLE_DATA_DIR": str(settings.fable_data_dir), "FABLE_SECRET_KEY": "x" * 32}


async def _kill_mid_answer(fable: Fable, env: dict[str, str], caller: Caller, conv: int) -> str:
    """Another Fable process answers in ``conv``; once it has flushed some text, SIGKILL it.
    Returns the text flushed by then."""
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(CHILD), "generate", str(caller.user_id), str(conv), env=env,
        stdout=asyncio.subprocess.DEVNULL)
    try:
        return await _wait_for_flushed_text(fable, min_words=20)
    finally:
        child.send_signal(signal.SIGKILL)
        await child.wait()


async def _wait_for_flushed_text(fable: Fable, *, min_words: int) -> str:
    for _ in range(1000):
        async with fable.db.transaction() as s:
            content = await s.scalar(select(Message.content).where(Message.role == "assistant"))
        if content and len(content.split()) >= min_words:
            return content
        await asyncio.sleep(0.02)
    raise AssertionError("the child never flushed any text")


@pytest.mark.slow
async def test_a_killed_process_s_answer_becomes_interrupted_within_the_bound_in_a_live_one(
    ai_fable: Fable, ai_settings: Settings, fake: FakeLLM, alice: Caller
) -> None:
    """A second Fable process answering is killed mid-answer (no restart follows): the sweep
    job, scheduled here as ``fable serve`` schedules it, marks the answer ``interrupted`` within
    STALE_AFTER seconds of its last heartbeat plus one sweep, keeping the partial text."""
    conv = await new_conversation(ai_fable, alice)
    answer = " ".join(f"part{i}" for i in range(2000))
    fake.replies.append(Reply(answer, delay=0.01))
    await _kill_mid_answer(ai_fable, _child_env(ai_settings), alice, conv)
    killed = time.monotonic()
    sweeps = Scheduler(ai_fable, {name: j for name, j in JOBS.items() if j.wake == SWEEP})
    sweeps.start()
    bound = STALE_AFTER + EVERY + 2.0  # its last beat was at most a flush before the kill
    try:
        while time.monotonic() - killed < bound:
            async with ai_fable.db.reading() as s:
                content, status, error = (await s.execute(select(Message.content, Message.status, Message.error)
                                                          .where(Message.role == "assistant"))).one()
            if status != "generating":
                break
            await asyncio.sleep(0.2)
    finally:
        await sweeps.close()
    took = time.monotonic() - killed
    assert status == "interrupted", f"still {status} {took:.1f} s after the kill"
    assert took >= STALE_AFTER - 1.0, "not before the heartbeat was stale: a live answer is never swept"
    assert content and answer.startswith(content) and content != answer
    assert error is not None and "stopped" in error
    stored = await ai_fable.call("follow_answer", {"conversation_id": conv}, alice)
    assert (stored["status"], stored["content"]) == ("interrupted", content)


async def test_a_live_process_marks_a_dead_processs_answer_interrupted_within_seconds(
    ai_fable: Fable, ai_settings: Settings, alice: Caller
) -> None:
    """An answer whose process died (no flush for a while) is not left "generating" until some
    restart: the sweep job, run by any live process that runs jobs, marks it interrupted,
    keeping its partial text; an answer beating still is left alone."""
    from sqlalchemy import text

    conv = await new_conversation(ai_fable, alice)
    await server_up_for(ai_fable.db, STALE_AFTER)
    async with ai_fable.db.transaction() as s:
        await s.execute(text(
            "INSERT INTO messages (conversation_id, user_id, role, content, status, updated_at) "
            "VALUES (:c, :u, 'assistant', 'half an ans', 'generating', now() - interval '20 seconds'), "
            "(:c, :u, 'assistant', 'still going', 'generating', now())"), {"c": conv, "u": alice.user_id})
    assert JOBS["sweep_interrupted_answers"].every == EVERY
    assert await run_job(ai_fable, "sweep_interrupted_answers")
    async with ai_fable.db.reading() as s:
        statuses = dict((await s.execute(select(Message.content, Message.status))).all())
    assert statuses == {"half an ans": "interrupted", "still going": "generating"}


async def test_the_sweep_never_marks_an_answer_its_own_process_is_writing_however_old_its_beat(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    """A database outage longer than STALE_AFTER stops every flush; the sweep that runs when it
    comes back must not take this process's own live answer for a dead one (issue 36)."""
    import threading

    from sqlalchemy import func, update

    conv = await new_conversation(ai_fable, alice)
    held = threading.Event()
    fake.replies.append(Reply("Still here, still writing.", hold=held))
    await assistant.send(alice, conv, "a long one")
    async with ai_fable.db.transaction() as s:  # what the outage leaves: no beat for a minute
        await s.execute(update(Message).where(Message.role == "assistant", Message.status == "generating")
                        .values(updated_at=func.now() - timedelta(minutes=1)))
    assert await run_job(ai_fable, "sweep_interrupted_answers")
    async with ai_fable.db.reading() as s:
        assert await s.scalar(select(Message.status).where(Message.role == "assistant")) == "generating"
    held.set()
    await assistant.wait(conv)
    answer = await ai_fable.call("follow_answer", {"conversation_id": conv}, alice)
    assert (answer["status"], answer["content"]) == ("done", "Still here, still writing.")


async def test_an_ipv6_url_in_a_message_does_not_break_the_answer(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    from support.chat import turn

    conv = await new_conversation(ai_fable, alice)
    fake.replies.append(Reply("Those are private addresses."))
    events = await turn(assistant, alice, conv, "see http://[2001:db8::1]/ and http://[::1]:8080/x")
    assert text_of(events) == "Those are private addresses." and events[-1].event == "done"
    assert [u["ok"] for u in events[0].data["urls"]] == [False, False]
    async with ai_fable.db.reading() as s:
        stored = (await s.execute(select(Message.status).where(Message.role == "assistant"))).scalar_one()
    assert stored == "done"
