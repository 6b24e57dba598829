"""The embedded wheel's PostgreSQL on the CPUs users have, emulated by qemu (``support.pgcluster``):
the machine running the suite may have AVX-512 and hide what a laptop sees.

- Haswell (AVX2, no AVX-512; every AMD before Zen 4, most Intel client CPUs): pgvector runs. A
  model at a real size embeds notes through the HNSW index, search finds them by meaning, a chat
  answer streams, and PostgreSQL's log has no crash (the earlier wheel's pgvector died with SIGILL
  here on the first vector).
- Nehalem (x86-64-v2, no AVX): the wheel's pgvector cannot even load. Its self-test crashes one
  backend, once; semantic features are off with the reason on every surface, and the database
  (made with the stand-in vector type), notes, tasks and search by words work. Later processes
  read the recorded verdict instead of crashing the server again.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.chat import new_conversation, text_of, turn
from support.fake_llm import FakeLLM, Reply
from support.pgcluster import throwaway_server
from support.users import make_user

from fable_core.config import Settings
from fable_core.runtime import Fable
from fable_web.app import create_app

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def at_384(fake: FakeLLM) -> Iterator[None]:
    fake.dims = 384
    yield
    fake.dims = 128


async def health(app: Fable) -> dict[str, object]:
    transport = httpx.ASGITransport(app=create_app(app), client=("203.0.113.7", 4711))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        response = await client.get("/api/health")
    assert response.status_code == 200
    body: dict[str, object] = response.json()
    return body


async def test_without_avx512_vectors_work_search_finds_by_meaning_and_chat_streams(
    ai_settings: Settings, fake: FakeLLM, at_384: None
) -> None:
    with throwaway_server("Haswell") as server:
        app = await Fable.open(ai_settings.model_copy(update={"database_url": server.url}))
        try:
            assert app.db.vectors.on, app.db.vectors.reason
            alice = await make_user(app, "alice")
            boiler = await app.call("create_note", {"title": "Boiler", "body": "the plumber services it in May"},
                                    alice)
            for i in range(12):  # inserts into the index made for the first
                await app.call("create_note", {"title": f"Recipe {i}", "body": f"lentils cumin onion {i}"}, alice)
            assert app.assistant is not None and app.assistant.worker is not None
            await app.assistant.worker.idle(backfill=False)
            found = await app.call("search_notes", {"query": "plumber boiler"}, alice)
            assert found["mode"] == "hybrid" and found["items"][0]["id"] == boiler["id"]
            fake.replies.append(Reply("The plumber comes in May."))
            conversation = await new_conversation(app, alice)
            events = await turn(app.assistant, alice, conversation, "when is the boiler serviced?")
            assert text_of(events) == "The plumber comes in May."
            assert (await health(app))["llm"]["semantic_search"]["on"] is True  # type: ignore[index]
        finally:
            await app.close()
        assert "terminated by signal" not in server.log()


async def test_where_pgvector_cannot_run_only_search_by_meaning_is_off(
    ai_settings: Settings, fake: FakeLLM, tmp_path: Path
) -> None:
    with throwaway_server("Nehalem") as server:
        settings = ai_settings.model_copy(update={"database_url": server.url})
        app = await Fable.open(settings)  # an embedding model is configured
        try:
            reason = app.db.vectors.reason
            assert not app.db.vectors.on and "vector extension crashed in Fable's self-test" in reason
            assert "docs/configuration.md#semantic-search-and-the-cpu" in reason
            assert app.embedder is None and app.assistant is not None and app.assistant.worker is None
            alice = await make_user(app, "alice")
            note = await app.call("create_note", {"title": "Boiler", "body": "the plumber comes in May"}, alice)
            task = await app.call("create_note", {"title": "Call the plumber", "status": "todo",
                                                  "due_date": "2026-12-24"}, alice)
            found = await app.call("search_notes", {"query": "plumber"}, alice)
            assert found["mode"] == "keyword"
            assert {hit["id"] for hit in found["items"]} == {note["id"], task["id"]}
            body = await health(app)
            assert body["database"] == {"status": "ok", "vectors": {"on": False, "reason": reason}}
            assert body["llm"]["semantic_search"] == {"on": False, "reason": reason}  # type: ignore[index]
        finally:
            await app.close()
        assert server.log().count("terminated by signal 4") == 1

        env = {**os.environ, "DATABASE_URL": server.url, "FABLE_DATA_DIR": str(tmp_path), "LLM_PROVIDER": "none"}
        again = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "fable_web.cli", "db", "upgrade"],
                                        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
        assert again.returncode == 0, again.stderr
        assert f"search by meaning: off: {reason}" in again.stderr
        assert server.log().count("terminated by signal 4") == 1, "the recorded verdict, not a second crash"
