"""One model server, one request at a time unless the operator says otherwise (issue 40, item 7):
llama.cpp's server ends a running stream when another request arrives, so Fable's own requests
(a capture beside a streaming answer, three summary refreshes, two research sections) cut each
other. The gate holds ``LLM_SERVER_CONCURRENCY`` requests in flight per server (1 for an
OpenAI-compatible server by default), and background work waits behind what a user waits for."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import pytest
from support.chat import new_conversation
from support.fake_llm import FakeLLM, Reply
from support.pace import scaled

from fable_core.assistant.gate import ModelGate, background
from fable_core.config import Settings
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def test_background_work_waits_behind_what_users_wait_for() -> None:
    gate = ModelGate(per_user=4, server=1)
    order: list[str] = []
    release = asyncio.Event()

    async def request(name: str, user: int, *, quiet: bool = False) -> None:
        if quiet:
            with background():
                async with gate.turn(user):
                    order.append(name)
                    await release.wait()
        else:
            async with gate.turn(user):
                order.append(name)
                await release.wait()

    first = asyncio.create_task(request("answer", 1))
    await asyncio.sleep(0)
    queued = [asyncio.create_task(request("summary", 1, quiet=True)),
              asyncio.create_task(request("title", 2, quiet=True)),
              asyncio.create_task(request("capture", 2))]
    await asyncio.sleep(0.05)
    assert order == ["answer"] and gate.running == 1, "one at a time on the server"
    release.set()
    await asyncio.gather(first, *queued)
    assert order == ["answer", "capture", "summary", "title"]


async def test_a_waiter_that_gives_up_leaves_its_place() -> None:
    gate = ModelGate(per_user=4, server=1)
    held = asyncio.Event()

    async def hold() -> None:
        async with gate.turn(1):
            await held.wait()

    holder = asyncio.create_task(hold())
    await asyncio.sleep(0)
    waiter = asyncio.create_task(hold())
    await asyncio.sleep(0.01)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    held.set()
    await holder
    async with asyncio.timeout(1):  # the slot came back: the next one gets it at once
        async with gate.turn(3):
            assert gate.running == 1


@pytest.fixture
async def openai_fable(ai_settings: Settings, openai_url: str) -> AsyncIterator[Fable]:
    app = await Fable.open(ai_settings.model_copy(update={
        "llm_provider": "openai", "openai_base_url": openai_url, "openai_api_key": "test-key",
        "openai_model": "qwen3:8b", "llm_concurrency_per_user": 2}))
    yield app
    await app.close()


async def test_a_capture_never_cuts_a_streaming_answer_on_an_openai_compatible_server(
    openai_fable: Fable, fake: FakeLLM, alice: Caller
) -> None:
    assert openai_fable.settings.llm_server_concurrency is None  # the default: 1 for such a server
    hold = threading.Event()
    fake.replies.append(Reply("A long answer.", hold=hold))
    fake.plain_replies.append(Reply('{"kind": "note", "title": "Boiler receipt", "body": ""}'))
    conv = await new_conversation(openai_fable, alice)
    await openai_fable.assistant.send(alice, conv, "tell me a story")
    try:
        deadline = asyncio.get_running_loop().time() + scaled(10)
        while not fake.chat_bodies() and asyncio.get_running_loop().time() < deadline:  # noqa: ASYNC110  the fake signals nothing
            await asyncio.sleep(0.02)
        capture = asyncio.create_task(openai_fable.call("quick_capture", {"text": "boiler receipt"}, alice))
        await asyncio.sleep(0.3)
        assert len(fake.chat_bodies()) == 1 and not capture.done(), "the capture waits for the answer"
    finally:
        hold.set()
    async with asyncio.timeout(scaled(20)):
        created = await capture
        await openai_fable.assistant.wait(conv)
    assert created["title"] == "Boiler receipt" and len(fake.chat_bodies()) >= 2
