"""The note assist, streamed: ``POST /api/notes/{note_id}/assist/stream`` (the generic SSE form of
the streaming tool ``assist_note``) over real HTTP (uvicorn on 127.0.0.1, API keys) against the
fake Ollama. Tokens arrive while the model writes, then ``result`` with the draft that was
stored; what is wrong before the model starts answering (including a model that is down)
answers with its status; a failure mid-way, or a client that goes away, saves nothing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from support.fake_llm import FakeLLM, Reply
from support.pace import scaled
from support.servers import free_port, serve
from support.sse import sse_events
from test_chat_http import key_for

from fable_core.config import Settings
from fable_core.db.models import NoteDraft
from fable_core.identity.accounts import create_api_key
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app
from fable_web.sse import stream_tool

BODY = "# Plan\n\nWe go on monday.\n\n## Packing\n\nsocks, socks, more socks\n\n## Budget\n\n300 euro\n"
ANSWER = " ".join(f"word{i}" for i in range(40))


@pytest.fixture
async def http(ai_fable: Fable, assistant: object, alice: Caller) -> AsyncIterator[httpx.AsyncClient]:
    async with serve(create_app(ai_fable)) as url, httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {await key_for(ai_fable, alice)}"}, timeout=scaled(10)
    ) as client:
        yield client


async def new_note(http: httpx.AsyncClient, body: str = BODY) -> dict[str, Any]:
    created = await http.post("/api/notes", json={"title": "Trip", "body": body})
    assert created.is_success, created.text
    return created.json()


async def rewrite(http: httpx.AsyncClient, note_id: int | str, body: Any) -> tuple[httpx.Response, list[dict]]:
    """POST the stream; its status, and its events when it is one."""
    async with http.stream("POST", f"/api/notes/{note_id}/assist/stream", json=body) as response:
        if response.status_code != 200:
            await response.aread()
            return response, []
        assert response.headers["content-type"].startswith("text/event-stream")
        return response, [event async for event in sse_events(response)]


async def drafts(fable: Fable) -> list[NoteDraft]:
    async with fable.db.transaction() as s:
        return list((await s.execute(select(NoteDraft))).scalars())


async def test_tokens_arrive_in_order_as_the_model_writes_then_the_result_is_the_stored_draft(
    http: httpx.AsyncClient, fake: FakeLLM, ai_fable: Fable, alice: Caller
) -> None:
    note = await new_note(http)
    fake.plain_replies.append(Reply(ANSWER, delay=0.03))
    events: list[dict] = []
    arrived: list[float] = []
    async with http.stream("POST", f"/api/notes/{note['id']}/assist/stream",
                           json={"instruction": "make it shorter"}) as response:
        assert response.status_code == 200
        async for event in sse_events(response):
            if not events:
                assert await drafts(ai_fable) == [], "saved only once the model has finished"
            events.append(event)
            arrived.append(time.monotonic())
    pieces = Reply(ANSWER).pieces()
    assert [e["event"] for e in events] == ["token"] * len(pieces) + ["result"]
    assert [e["data"]["text"] for e in events[:-1]] == pieces
    assert arrived[-1] - arrived[0] > 0.5, "tokens come as the model writes them, not all at the end"
    done = events[-1]["data"]
    assert "".join(pieces) == done["content"] == ANSWER
    stored = await http.get(f"/api/notes/{note['id']}/draft")
    assert stored.json() == done
    assert (done["status"], done["original"], done["base_version"]) == ("ready", BODY, note["version"])
    assert "section" not in done, "the whole note: no section, and no null"
    assert (await http.get(f"/api/notes/{note['id']}")).json()["body"] == BODY, "the note waits for accept"

    streamed_prompt = fake.chat_bodies()[-1]["messages"]
    await ai_fable.call("assist_note", {"note_id": note["id"], "instruction": "make it shorter"}, alice)
    assert fake.chat_bodies()[-1]["messages"] == streamed_prompt, "the tool and the stream ask the same"


async def test_a_streamed_section_draft_is_accepted_like_the_tools(http: httpx.AsyncClient, fake: FakeLLM) -> None:
    note = await new_note(http)
    fake.plain_replies.append(Reply("- socks\n- charger"))
    _, events = await rewrite(http, note["id"], {"instruction": "checklist", "section": "Packing"})
    done = events[-1]
    assert done["event"] == "result" and done["data"]["section"] == "Packing"
    assert done["data"]["original"].strip() == "socks, socks, more socks"
    accepted = await http.post(f"/api/notes/{note['id']}/draft/accept")
    assert accepted.status_code == 200, accepted.text
    body = (await http.get(f"/api/notes/{note['id']}")).json()["body"]
    assert "- socks\n- charger" in body and "## Budget\n\n300 euro" in body and "more socks" not in body


async def test_without_a_model_the_stream_answers_503_and_saves_nothing(fable: Fable, alice: Caller) -> None:
    async with serve(create_app(fable)) as url, httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {await key_for(fable, alice)}"}, timeout=scaled(10)
    ) as http:
        note = await new_note(http)
        response, _ = await rewrite(http, note["id"], {"instruction": "make it shorter"})
    assert response.status_code == 503
    assert response.json()["error"] == {"type": "unavailable", "message": "no model available: LLM_PROVIDER is none",
                                        "details": {"provider": "none"}}
    assert await drafts(fable) == []


async def test_another_users_note_is_not_found_and_no_model_is_asked(
    http: httpx.AsyncClient, fake: FakeLLM, ai_fable: Fable, bob: Caller
) -> None:
    bobs = await ai_fable.call("create_note", {"title": "Bob's", "body": "private"}, bob)
    for note_id in (bobs["id"], 999_999):
        response, _ = await rewrite(http, note_id, {"instruction": "make it shorter"})
        assert response.status_code == 404
        assert response.json()["error"]["message"] == f"note {note_id} not found"
    assert fake.chat_bodies() == [] and await drafts(ai_fable) == []


async def test_bad_requests_are_refused_before_the_model_and_save_nothing(
    http: httpx.AsyncClient, fake: FakeLLM, ai_fable: Fable, alice: Caller
) -> None:
    note = await new_note(http)
    for body in ({"instruction": "   "}, {}, {"instruction": "x" * 2001}, {"instruction": "x", "colour": "red"},
                 {"instruction": "x", "note_id": note["id"] + 1}):
        response, _ = await rewrite(http, note["id"], body)
        assert (response.status_code, response.json()["error"]["type"]) == (422, "invalid_input"), body
    empty, _ = await rewrite(http, note["id"], {"instruction": "   "})
    error = empty.json()["error"]  # for people, without the tool's name; for agents, the hint
    assert error["message"].startswith("invalid input: instruction: ")
    assert error["details"]["hint"].startswith("invalid arguments for assist_note: instruction: ")
    section, _ = await rewrite(http, note["id"], {"instruction": "x", "section": "Nope"})
    assert section.status_code == 422
    assert section.json()["error"]["details"]["sections"] == ["Plan", "Packing", "Budget"]
    not_a_number, _ = await rewrite(http, "abc", {"instruction": "x"})
    assert not_a_number.status_code == 422
    not_json = await http.post(f"/api/notes/{note['id']}/assist/stream", content=b"instruction=x",
                               headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert not_json.status_code == 415
    async with ai_fable.db.transaction() as s:
        _, read_key = await create_api_key(s, alice.user_id, "read only", scope="read")
    read_only = await http.post(f"/api/notes/{note['id']}/assist/stream", json={"instruction": "x"},
                                headers={"Authorization": f"Bearer {read_key}"})
    assert read_only.status_code == 403
    anonymous = await http.post(f"/api/notes/{note['id']}/assist/stream", json={"instruction": "x"},
                                headers={"Authorization": ""})
    assert anonymous.status_code == 401
    assert fake.chat_bodies() == [] and await drafts(ai_fable) == []


async def test_a_client_that_goes_away_mid_stream_leaves_no_draft(
    http: httpx.AsyncClient, fake: FakeLLM, ai_fable: Fable
) -> None:
    note = await new_note(http)
    fake.plain_replies.append(Reply(ANSWER, delay=0.03))  # about 1.2 s of writing
    async with http.stream("POST", f"/api/notes/{note['id']}/assist/stream", json={"instruction": "x"}) as response:
        seen = 0
        async for event in sse_events(response):
            seen += event["event"] == "token"
            if seen == 3:
                break  # the connection drops
    await asyncio.sleep(2.0)  # longer than the model would have written
    assert await drafts(ai_fable) == []


async def test_a_note_deleted_while_the_model_writes_ends_in_an_error_event(
    http: httpx.AsyncClient, fake: FakeLLM, ai_fable: Fable
) -> None:
    note = await new_note(http)
    fake.plain_replies.append(Reply(ANSWER, delay=0.01))
    events: list[dict] = []
    async with http.stream("POST", f"/api/notes/{note['id']}/assist/stream", json={"instruction": "x"}) as response:
        async for event in sse_events(response):
            if not events:
                assert (await http.delete(f"/api/notes/{note['id']}")).status_code == 200
            events.append(event)
    assert {e["event"] for e in events[:-1]} == {"token"}
    assert events[-1] == {"event": "error", "data": {"type": "not_found", "message": f"note {note['id']} not found",
                                                     "details": {"note_id": note["id"]}}}
    assert await drafts(ai_fable) == []


@pytest.fixture
async def down(ai_settings: Settings) -> AsyncIterator[Fable]:
    app = await Fable.open(ai_settings.model_copy(update={"ollama_url": f"http://127.0.0.1:{free_port()}"}))
    yield app
    await app.close()


async def test_a_model_that_is_down_is_a_503_before_any_token(down: Fable, alice: Caller) -> None:
    async with serve(create_app(down)) as url, httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {await key_for(down, alice)}"}, timeout=scaled(10)
    ) as http:
        note = await new_note(http)
        response, events = await rewrite(http, note["id"], {"instruction": "x"})
    assert response.status_code == 503 and events == []
    assert response.json()["error"]["type"] == "unavailable"
    assert response.json()["error"]["message"].startswith("no model available: could not connect to Ollama at http://127.0.0.1:")
    assert await drafts(down) == []


async def test_quiet_models_get_heartbeats_and_a_closed_stream_saves_nothing(
    ai_fable: Fable, fake: FakeLLM, alice: Caller
) -> None:
    note = await ai_fable.call("create_note", {"title": "Trip", "body": BODY}, alice)
    args = {"note_id": note["id"], "instruction": "shorter"}
    fake.plain_replies.append(Reply("slow small answer", delay=0.15))
    response = await stream_tool(ai_fable.dispatcher, "assist_note", dict(args), alice, heartbeat=0.02)
    frames = [chunk async for chunk in response.body_iterator]
    text = b"".join(f if isinstance(f, bytes) else f.encode() for f in frames).decode()
    assert text.count(": ping") >= 3 and "event: result" in text
    assert [d.content for d in await drafts(ai_fable)] == ["slow small answer"]

    await ai_fable.call("reject_note_draft", {"note_id": note["id"]}, alice)
    fake.plain_replies.append(Reply("another slow answer", delay=0.05))
    response = await stream_tool(ai_fable.dispatcher, "assist_note", dict(args), alice)
    body = response.body_iterator
    assert b"event: token" in await anext(body)  # type: ignore[arg-type, operator]
    await body.aclose()  # type: ignore[attr-defined]  # the client went away
    await asyncio.sleep(0.3)  # longer than the model would have written
    assert await drafts(ai_fable) == []
