"""The chat endpoints over real HTTP (uvicorn on 127.0.0.1, API keys): post a message, follow
the SSE stream, drop the connection mid-answer and resume with Last-Event-ID, stop, errors."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy import func, select
from support.fake_llm import FakeLLM, Reply
from support.pace import scaled
from support.servers import serve
from support.sse import sse_events

from fable_core.db.models import Message
from fable_core.identity.accounts import create_api_key
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app

ANSWER = " ".join(f"word{i}" for i in range(150))


@pytest.fixture
async def base_url(ai_fable: Fable, assistant: object) -> AsyncIterator[str]:
    async with serve(create_app(ai_fable)) as url:
        yield url


async def key_for(fable: Fable, caller: Caller) -> str:
    async with fable.db.transaction() as s:
        _, key = await create_api_key(s, caller.user_id, "test")
    return key


@pytest.fixture
async def http(base_url: str, ai_fable: Fable, alice: Caller) -> AsyncIterator[httpx.AsyncClient]:
    headers = {"Authorization": f"Bearer {await key_for(ai_fable, alice)}"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=scaled(10)) as client:
        yield client


async def start(http: httpx.AsyncClient, content: str = "count to 150") -> int:
    created = await http.post("/api/chat/conversations", json={})
    assert created.status_code == 201, created.text
    conv = created.json()["id"]
    posted = await http.post(f"/api/chat/conversations/{conv}/messages", json={"content": content})
    assert posted.status_code == 202, posted.text
    assert set(posted.json()) == {"conversation_id", "user_message_id", "message_id"}
    return conv


async def test_disconnect_and_resume_with_last_event_id(http: httpx.AsyncClient, fake: FakeLLM) -> None:
    fake.replies.append(Reply(ANSWER, delay=0.003))
    conv = await start(http)
    url = f"/api/chat/conversations/{conv}/generation/stream"
    first: list[dict] = []
    async with http.stream("GET", url) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        async for event in sse_events(response):
            first.append(event)
            if sum(e["event"] == "token" for e in first) == 20:
                break  # the connection drops
    async with http.stream("GET", url, headers={"Last-Event-ID": first[-1]["id"]}) as response:
        rest = [event async for event in sse_events(response)]
    events, result = first + rest[:-1], rest[-1]
    assert events[0]["event"] == "context" and events[-1]["event"] == "done"
    assert "".join(e["data"]["text"] for e in events if e["event"] == "token") == ANSWER
    numbers = [int(e["id"].split(":")[1]) for e in events]
    assert numbers == list(range(1, len(events) + 1)), "no gap, no repeat"
    assert result["event"] == "result" and "id" not in result   # follow_answer's result: the stored answer
    assert (result["data"]["content"], result["data"]["status"]) == (ANSWER, "done")
    detail = (await http.get(f"/api/chat/conversations/{conv}")).json()
    assert [(m["role"], m["status"]) for m in detail["messages"]] == [("user", "done"), ("assistant", "done")]
    assert detail["messages"][1]["content"] == ANSWER


async def test_stop_over_http(http: httpx.AsyncClient, fake: FakeLLM, ai_fable: Fable) -> None:
    fake.replies.append(Reply(ANSWER, delay=0.02))
    conv = await start(http)
    async with http.stream("GET", f"/api/chat/conversations/{conv}/generation/stream") as response:
        events = []
        async for event in sse_events(response):
            events.append(event)
            if event["event"] == "token" and sum(e["event"] == "token" for e in events) == 3:
                stopped = await http.post(f"/api/chat/conversations/{conv}/generation/stop")
                assert stopped.json() == {"stopped": True}
    done = next(e for e in events if e["event"] == "done")
    assert done["data"]["stopped"] is True and events[-1]["event"] == "result"
    await ai_fable.assistant.wait(conv)
    detail = (await http.get(f"/api/chat/conversations/{conv}")).json()
    assert detail["messages"][1]["status"] == "stopped"
    assert ANSWER.startswith(detail["messages"][1]["content"])


async def test_bad_requests_are_refused_and_write_nothing(
    http: httpx.AsyncClient, base_url: str, ai_fable: Fable, bob: Caller
) -> None:
    conv = (await http.post("/api/chat/conversations", json={})).json()["id"]
    for body in ({}, {"content": ""}, {"content": "hi", "extra": 1}, {"content": "hi", "note_ids": ["x"]}):
        response = await http.post(f"/api/chat/conversations/{conv}/messages", json=body)
        assert response.status_code == 422, body
    missing = await http.post(f"/api/chat/conversations/{conv}/messages", json={"content": "hi", "note_ids": [999]})
    assert missing.status_code == 404
    bad_type = await http.post("/api/chat/conversations", json={"conversation_type": "party"})
    assert bad_type.status_code == 422
    async with httpx.AsyncClient(base_url=base_url, timeout=scaled(10),
                                 headers={"Authorization": f"Bearer {await key_for(ai_fable, bob)}"}) as as_bob:
        for method, path in (("GET", "generation/stream"), ("POST", "generation/stop"), ("POST", "messages")):
            body = {"content": "x"} if path == "messages" else None
            response = await as_bob.request(method, f"/api/chat/conversations/{conv}/{path}", json=body)
            assert response.status_code == 404, (method, path)
    anonymous = await httpx.AsyncClient(base_url=base_url).__aenter__()
    try:
        assert (await anonymous.get(f"/api/chat/conversations/{conv}/generation/stream")).status_code == 401
    finally:
        await anonymous.aclose()
    async with ai_fable.db.transaction() as s:
        assert await s.scalar(select(func.count()).select_from(Message)) == 0
