"""Load is shed, not queued (issue 36, item 4): past ``FABLE_MAX_REQUESTS`` requests in progress a
process answers the next one at once, 503 with ``Retry-After``, having done nothing — the REST
error body on the API, a JSON-RPC error on MCP — while health and held event streams still
answer; once the requests in progress end, everything is served again.

The requests holding the places are quick captures whose model (the fake Ollama) holds its answer."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import httpx
from sqlalchemy import select
from support.fables import fable_with
from support.fake_llm import FakeLLM, Reply
from support.pace import scaled
from support.servers import serve
from support.users import make_user

from fable_core.config import Settings, request_limit, session_limit
from fable_core.db.models import Note
from fable_core.identity.accounts import create_api_key
from fable_web.app import create_app

LIMIT = 2
HELD = ("Boiler service receipt", "Lentil soup recipe")  # one capture per place


async def test_past_the_limit_a_request_is_refused_at_once_and_nothing_is_done(
    ai_settings: Settings, fake: FakeLLM
) -> None:
    async with fable_with(ai_settings, fable_max_requests=LIMIT, migrate=False) as app:
        carol = await make_user(app, "carol_shed", password=None)
        async with app.db.transaction() as s:
            _, key = await create_api_key(s, carol.user_id, "load")
        conv = int((await app.call("create_conversation", {}, carol))["id"])
        web = create_app(app)
        held, answering = threading.Event(), threading.Event()
        fake.replies.append(Reply("Still streaming.", hold=answering))
        # titles unlike each other: "Held 0" and "Held 1" are very similar titles, a duplicate (409)
        fake.plain_replies.extend([Reply(f'{{"kind": "note", "title": "{title}", "body": ""}}', hold=held)
                                   for title in HELD])
        async with serve(web) as url, httpx.AsyncClient(base_url=url, timeout=scaled(30),
                                                        headers={"Authorization": f"Bearer {key}"}) as http:
            await app.assistant.send(carol, conv, "a long answer")
            async with http.stream("GET", f"/api/chat/conversations/{conv}/generation/stream",
                                   headers={"Accept": "text/event-stream"}) as following:
                assert following.status_code == 200
                await _until(lambda: web.state.load.busy == 0, "the stream giving its place back")
                holding = [asyncio.create_task(http.post("/api/assist/capture", json={"text": f"held {i}"}))
                           for i in range(LIMIT)]
                await _until(lambda: web.state.load.busy == LIMIT, "the held requests taking their places")

                listed = await http.get("/api/notes")
                created = await http.post("/api/notes", json={"title": "Refused"})
                # a request's headers do not make it a stream: only its answer does (no way past the limit)
                claimed = await http.get("/api/notes", headers={"Accept": "text/event-stream"})
                for refused in (listed, created, claimed):
                    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
                    error = refused.json()["error"]
                    assert error["type"] == "busy" and "nothing was done" in error["message"]
                mcp = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 7, "method": "tools/list"},
                                      headers={"Accept": "application/json, text/event-stream",
                                               "MCP-Protocol-Version": "2026-07-28"})
                assert mcp.status_code == 503 and mcp.headers["retry-after"] == "1"
                assert mcp.json()["error"]["code"] == -32000 and mcp.json()["error"]["data"]["type"] == "busy"

                health = await http.get("/api/health")
                assert health.status_code == 200
                assert health.json()["load"] == {"in_progress": LIMIT, "limit": LIMIT, "refused": 4}

                answering.set()  # the stream already running is not affected by the load
                text = ""
                async for line in following.aiter_lines():
                    text += line + "\n"
                    if line.startswith("event: done"):
                        break
                assert "Still" in text and "streaming." in text

            held.set()
            assert [r.status_code for r in await asyncio.gather(*holding)] == [200] * LIMIT
            assert web.state.load.busy == 0
            async with app.db.reading() as s:
                titles = set((await s.execute(select(Note.title).where(Note.user_id == carol.user_id))).scalars())
            assert titles == set(HELD), "the captures wrote, the refused create did not"
            assert (await http.get("/api/notes")).status_code == 200


async def _until(check: Callable[[], bool], what: str, within: float = 30.0) -> None:
    within = scaled(within)
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"no {what} within {within:g} s"
        await asyncio.sleep(0.02)


async def test_past_the_mcp_session_limit_a_new_session_is_refused_with_retry_after(settings: Settings) -> None:
    """``FABLE_MCP_MAX_SESSIONS`` (by default 16 per request a process works on at once): the
    session past it is refused at its initialize, 503 with ``Retry-After``; the open one works."""
    assert session_limit(settings.model_copy(update={"fable_mcp_max_sessions": 0})) == 16 * request_limit(settings)
    async with fable_with(settings, fable_mcp_max_sessions=1, migrate=False) as app:
        dave = await make_user(app, "dave_sessions", password=None)
        async with app.db.transaction() as s:
            _, key = await create_api_key(s, dave.user_id, "sessions")
        headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": "2025-11-25"}
        opening = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        async with serve(create_app(app)) as url, httpx.AsyncClient(base_url=url, headers=headers) as http:
            first = await http.post("/mcp", json=opening)
            assert first.status_code == 200 and first.headers["mcp-session-id"]
            second = await http.post("/mcp", json=opening)
            assert second.status_code == 503 and second.headers["retry-after"] == "1"
            assert "sessions" in second.text
            ping = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                                   headers={"mcp-session-id": first.headers["mcp-session-id"]})
            assert ping.status_code == 200
