"""Chat answers across processes, fine-grained: two Fable runtimes in this process on one
database, as two replicas (each its own generations, claims and LISTEN connection). An answer
written by A is followed, resumed and stopped through B, with no lost or repeated event; a
second send through B is refused; an answer whose process died ends ``interrupted`` for B's
followers; a finished answer's rows go after the grace."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import func, select, text
from support.beats import server_up_for
from support.fake_llm import FakeLLM, Reply
from support.pace import scaled

from fable_core.assistant.service import Assistant
from fable_core.config import Settings
from fable_core.db.models import Generation, GenerationEvent, Message
from fable_core.errors import Conflict
from fable_core.infra.generations import StreamEvent
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

WORDS = "one two three four five six seven eight nine ten eleven twelve"


@pytest.fixture(scope="module")
async def pair(settings: Settings, replicas_llm: tuple[FakeLLM, str]) -> AsyncIterator[tuple[Fable, Fable]]:
    """Two replicas whose assistant talks to the fake Ollama."""
    ai = settings.model_copy(update={"llm_provider": "ollama", "ollama_url": replicas_llm[1],
                                     "embed_model": "fake-embed"})
    a, b = await Fable.open(ai), await Fable.open(ai)
    for one in (a, b):
        one.assistant.flush_interval = 0.1
    yield a, b
    await a.close()
    await b.close()


@pytest.fixture
async def replicas(pair: tuple[Fable, Fable], replicas_llm: tuple[FakeLLM, str]
                   ) -> AsyncIterator[tuple[Assistant, Assistant, FakeLLM]]:
    replicas_llm[0].reset()
    a, b = pair
    yield a.assistant, b.assistant, replicas_llm[0]
    for one in (a.assistant, b.assistant):
        for key in list(one.generations._buffers):
            await one.generations.wait(key)
        await one.generations.close()


async def _conversation(fable: Fable, caller: Caller) -> int:
    return int((await fable.call("create_conversation", {}, caller))["id"])


async def _collect(events: AsyncIterator[StreamEvent], n: int | None = None) -> list[StreamEvent]:
    got: list[StreamEvent] = []
    async for event in events:
        got.append(event)
        if n is not None and len(got) == n:
            break
    return got


def _seqs(events: list[StreamEvent]) -> list[int]:
    return [int(e.id.split(":")[1]) for e in events]


async def test_followed_and_resumed_through_another_replica_without_gap_or_repeat(
    fable: Fable, replicas: tuple[Assistant, Assistant, FakeLLM], alice: Caller
) -> None:
    a, b, llm = replicas
    conv = await _conversation(fable, alice)
    llm.replies.append(Reply(WORDS, delay=0.02))
    await a.send(alice, conv, "count for me")
    assert b.generations.get(f"chat:{conv}") is None  # B has no buffer: it reads PostgreSQL
    first = await _collect(b.follow(alice, conv), 4)  # live, then the client goes away
    rest = await _collect(b.follow(alice, conv, last_event_id=first[-1].id))
    seen = first + rest
    assert _seqs(seen) == list(range(1, len(seen) + 1))  # strictly consecutive
    assert seen[-1].event == "done"
    assert "".join(e.data["text"] for e in seen if e.event == "token") == WORDS
    local = a.generations.get(f"chat:{conv}")
    assert local is not None and [(e.id, e.event, e.data) for e in local.events] == [
        (e.id, e.event, e.data) for e in seen]  # the same events, as A's own followers saw them
    again = await _collect(b.follow(alice, conv, last_event_id=seen[5].id))  # finished: still replayable
    assert again == seen[6:]


async def test_one_answer_per_conversation_anywhere_and_stop_through_another_replica(
    fable: Fable, replicas: tuple[Assistant, Assistant, FakeLLM], alice: Caller, bob: Caller
) -> None:
    a, b, llm = replicas
    conv = await _conversation(fable, alice)
    llm.replies.append(Reply(WORDS * 20, delay=0.02))
    await a.send(alice, conv, "talk for a while")
    with pytest.raises(Conflict):
        await b.send(alice, conv, "and another thing")
    with pytest.raises(Conflict):  # the tool, as a surface calls it through B
        await b.dispatcher.call("send_message", {"conversation_id": conv, "content": "again"}, alice)
    following = asyncio.create_task(_collect(b.follow(alice, conv)))
    await asyncio.sleep(0.2)
    stopped = await fable.call("stop_answer", {"conversation_id": conv}, alice)  # neither A nor B
    assert stopped == {"stopped": True}
    events = await asyncio.wait_for(following, scaled(5))
    assert events[-1].event == "done" and events[-1].data["stopped"] is True, events[-1].data  # what ended it, if not
    assert _seqs(events) == list(range(1, len(events) + 1))
    async with fable.db.reading() as s:
        status = await s.scalar(select(Message.status).where(Message.id == events[-1].data["message_id"]))
    assert status == "stopped"
    await b.send(alice, conv, "your turn")  # the conversation is free again, on any replica
    assert (await _collect(b.follow(alice, conv)))[-1].event == "done"
    with pytest.raises(Exception, match="not found"):  # a stranger neither stops nor learns of it
        await fable.call("stop_answer", {"conversation_id": conv}, bob)


async def test_an_answer_whose_process_died_ends_interrupted_for_followers_elsewhere(
    fable: Fable, replicas: tuple[Assistant, Assistant, FakeLLM], alice: Caller
) -> None:
    _, b, _ = replicas
    conv = await _conversation(fable, alice)
    await server_up_for(fable.db, b.stale_after)
    async with fable.db.transaction() as s:  # what a process killed mid-answer leaves: its text flushed
        # every 2 s, its events every 50 ms (one more than the text)
        message_id = await s.scalar(text(
            "INSERT INTO messages (conversation_id, user_id, role, content, status, updated_at) "
            "VALUES (:c, :u, 'assistant', 'half', 'generating', now() - interval '30 seconds') RETURNING id"),
            {"c": conv, "u": alice.user_id})
        s.add(Generation(key=f"chat:{conv}", claim="gone.1", message_id=message_id, owner=alice.user_id,
                         heartbeat=func.now() - text("interval '30 seconds'")))
        s.add_all([GenerationEvent(key=f"chat:{conv}", message_id=message_id, seq=n, event="token",
                                   data={"text": word}) for n, word in ((1, "half "), (2, "an"))])
    events = await asyncio.wait_for(_collect(b.follow(alice, conv, last_event_id=f"{message_id}:1")), scaled(5))
    assert [(e.id, e.event) for e in events] == [(f"{message_id}:2", "token"), (f"{message_id}:3", "error")]
    assert events[-1].data["status"] == "interrupted" and events[-1].data["type"] == "interrupted"
    async with fable.db.reading() as s:  # the sweep its follower ran marked it, and forgot the generation
        assert await s.scalar(select(func.count()).select_from(Generation)) == 0
    answer = await fable.call("follow_answer", {"conversation_id": conv}, alice)
    # its last flush held "half"; the events stored after it are kept in the answer (issue 36 item 8)
    assert (answer["status"], answer["content"]) == ("interrupted", "half an")
    await b.send(alice, conv, "once more")  # the dead claim is no obstacle
    assert (await _collect(b.follow(alice, conv)))[-1].event == "done"


async def test_a_finished_answers_rows_go_after_the_grace(
    fable: Fable, replicas: tuple[Assistant, Assistant, FakeLLM], alice: Caller
) -> None:
    a, b, _ = replicas
    conv = await _conversation(fable, alice)
    await a.send(alice, conv, "short")
    await _collect(a.follow(alice, conv))
    await a.shared.flush()
    async with fable.db.reading() as s:
        assert await s.scalar(select(func.count()).select_from(GenerationEvent)) > 0
    b.shared.grace = 0.0
    try:
        await b.shared.sweep()
    finally:
        b.shared.grace = 60.0
    async with fable.db.reading() as s:
        assert await s.scalar(select(func.count()).select_from(GenerationEvent)) == 0
        assert await s.scalar(select(func.count()).select_from(Generation)) == 0


async def test_deleting_the_conversation_through_another_replica_stops_its_answer(
    fable: Fable, replicas: tuple[Assistant, Assistant, FakeLLM], alice: Caller
) -> None:
    a, b, llm = replicas
    conv = await _conversation(fable, alice)
    llm.replies.append(Reply(WORDS * 50, delay=0.02))
    await a.send(alice, conv, "talk for a while")
    await asyncio.sleep(0.2)
    await b.dispatcher.call("delete_conversation", {"conversation_id": conv}, alice)
    await asyncio.wait_for(a.wait(conv), 5)  # stopped, not talked out (that would take 12 s)
