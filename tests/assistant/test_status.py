"""The model server's status: probed in the background and shared, never while an answer streams
(llama.cpp's server ends a running answer when another request arrives), and what decides
whether tools that need a model are offered."""

from __future__ import annotations

import asyncio
import logging
import threading

import httpx
import pytest
from support.fake_llm import FakeLLM, Reply
from support.pace import scaled

from fable_core.assistant.status import ProviderStatus
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app


async def test_page_loads_read_the_last_probe_instead_of_asking_the_model_server(
        ai_fable: Fable, fake: FakeLLM) -> None:
    status: ProviderStatus = ai_fable.assistant.status
    await status.check()
    fake.reset()
    transport = httpx.ASGITransport(create_app(ai_fable))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        answers = await asyncio.gather(*(client.get("/api/health") for _ in range(20)))
    assert {a.json()["llm"]["status"] for a in answers} == {"ok"}
    assert fake.model_lists == 0


async def test_callers_asking_at_once_share_one_probe(ai_fable: Fable, fake: FakeLLM) -> None:
    status: ProviderStatus = ai_fable.assistant.status
    status.fresh_for = 0.0  # every answer is stale: each asker would probe
    try:
        healths = await asyncio.gather(*(status.current() for _ in range(10)))
    finally:
        status.fresh_for = 10.0
    assert {h.status for h in healths} == {"ok"} and fake.model_lists == 1


async def test_no_probe_is_sent_while_an_answer_streams(ai_fable: Fable, fake: FakeLLM, alice: Caller) -> None:
    status: ProviderStatus = ai_fable.assistant.status
    release = threading.Event()
    fake.plain_replies.append(Reply('{"kind": "note", "title": "Held"}', hold=release))
    capture = asyncio.create_task(ai_fable.call("quick_capture", {"text": "held"}, alice))
    status.fresh_for = 0.0
    try:
        for _ in range(round(scaled(5) / 0.01)):
            if status.gate.running:
                break
            await asyncio.sleep(0.01)
        assert status.gate.running == 1
        during = [await status.current() for _ in range(3)]
        asked_during = fake.model_lists
    finally:
        release.set()
        await capture
    after = await status.current()
    status.fresh_for = 10.0
    assert asked_during == 0 and {h.status for h in during} == {"ok"}
    assert after.status == "ok" and fake.model_lists == 1


async def test_a_server_that_stops_answering_withdraws_the_model_tools(
        ai_fable: Fable, alice: Caller, caplog: pytest.LogCaptureFixture) -> None:
    down = await Fable.open(ai_fable.settings.model_copy(update={"ollama_url": "http://127.0.0.1:9"}))
    try:
        with caplog.at_level(logging.WARNING, "fable_core.assistant.status"):
            health = await down.assistant.status.check()
            for _ in range(3):  # probes after the first say nothing more while it stays down
                await down.assistant.status.check()
        offered = {t.name for t in down.registry.for_caller(alice, down.availability)}
    finally:
        await down.close()
    # issue 37 item 10: one line, naming the setting to change and how to run without a model
    [said] = [r.getMessage() for r in caplog.records if r.name == "fable_core.assistant.status"]
    assert said.startswith("the model server at http://127.0.0.1:9 (OLLAMA_URL=http://127.0.0.1:9, "
                           "LLM_PROVIDER=ollama) does not answer")
    assert "LLM_PROVIDER=none" in said
    assert health.status == "down" and not down.availability.meets({"llm"})
    assert "quick_capture" not in offered and "assist_note" not in offered and "list_notes" in offered
