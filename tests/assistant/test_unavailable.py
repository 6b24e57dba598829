"""A provider that is down or not configured: LLM features say so clearly (503 on REST), and
everything else — notes, search, conversations — keeps working."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy import select
from support.chat import new_conversation, turn
from support.servers import free_port

from fable_core.config import Settings
from fable_core.db.models import Message
from fable_core.errors import Unavailable
from fable_core.identity.accounts import create_api_key
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app


@pytest.fixture
async def down(ai_settings: Settings) -> AsyncIterator[Fable]:
    app = await Fable.open(ai_settings.model_copy(update={"ollama_url": f"http://127.0.0.1:{free_port()}"}))
    yield app
    await app.close()


async def test_a_provider_that_is_down_fails_the_answer_clearly_and_nothing_else(
    down: Fable, alice: Caller
) -> None:
    assistant = down.assistant
    conv = await new_conversation(down, alice)
    events = await turn(assistant, alice, conv, "hello?")
    assert [e.event for e in events] == ["context", "error"]
    assert events[1].data["type"] == "unavailable"
    assert events[1].data["message"].startswith("no model available: could not connect to Ollama at http://127.0.0.1:")
    async with down.db.transaction() as s:
        stored = (await s.execute(select(Message.role, Message.status))).all()
    assert sorted(stored) == [("assistant", "error"), ("user", "done")]
    note = await down.call("create_note", {"title": "Still works", "body": "x" * 200}, alice)
    found = await down.call("search_notes", {"query": "works"}, alice)
    assert found["mode"] == "keyword" and [h["id"] for h in found["items"]] == [note["id"]]
    assert (await down.llm.health()).status == "down"
    with pytest.raises(Unavailable, match=r"^no model available"):
        await down.call("list_models", {}, alice)  # alice is the first user: an admin


async def test_without_a_provider_chat_answers_503(fable: Fable, alice: Caller) -> None:
    async with fable.db.transaction() as s:
        _, key = await create_api_key(s, alice.user_id, "t")
    transport = httpx.ASGITransport(create_app(fable))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost",
                                 headers={"Authorization": f"Bearer {key}"}) as http:
        conv = (await http.post("/api/chat/conversations", json={})).json()["id"]
        response = await http.post(f"/api/chat/conversations/{conv}/messages", json={"content": "hi"})
        assert response.status_code == 503
        assert response.json()["error"]["message"] == "no model available: LLM_PROVIDER is none"
        listed = await http.get("/api/chat/conversations")
        assert [c["id"] for c in listed.json()["items"]] == [conv]
        health = (await http.get("/api/health")).json()
        assert health["llm"]["status"] == "disabled"
