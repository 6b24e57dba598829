"""When the database's vector extension cannot be trusted: a self-test that errors or answers
wrongly turns semantic features off and says why, a verdict is remembered across processes
(``fable db check`` forgets it), and an embedding write that kills its backend pauses the worker
with growing pauses and is given up after a bounded number of crashes, while the rest is embedded.

The extension is made to fail for real (its functions replaced in a database of the test's, or
its backend killed with SIGKILL mid-write on a throwaway server): nothing of Fable's is mocked.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool
from support.databases import fresh_database, sql
from support.fake_llm import FakeLLM
from support.pace import scaled
from support.pgcluster import throwaway_server
from support.users import make_user

from fable_core.assistant.embeddings import MAX_CRASHES, EmbeddingWorker
from fable_core.config import Settings
from fable_core.db.models import AppLog, EmbeddingFailure, Note, NoteEmbedding
from fable_core.runtime import Fable

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def fresh_url(fable: Fable, database_url: str) -> AsyncIterator[str]:
    """A new, empty database on the session's server."""
    async with fresh_database(database_url, "fable_vec") as url:
        yield url


@pytest.mark.parametrize(("body", "said"), [
    ("LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'simulated failure'; END $$",
     "the database's vector extension fails its self-test: simulated failure"),
    ("LANGUAGE sql AS $$ SELECT 42::float8 $$",
     "the database's vector extension gives wrong answers (vector_norm at 384 dimensions is 42.0000, not"),
])
async def test_a_failing_extension_turns_search_by_meaning_off_and_everything_else_works(
    ai_settings: Settings, fake: FakeLLM, fresh_url: str, body: str, said: str
) -> None:
    await sql(fresh_url, "CREATE EXTENSION vector",
              f"CREATE OR REPLACE FUNCTION vector_norm(vector) RETURNS float8 {body}")
    app = await Fable.open(ai_settings.model_copy(update={"database_url": fresh_url}))
    try:
        assert not app.db.vectors.on and app.db.vectors.reason.startswith(said)
        assert app.embedder is None and app.assistant is not None and app.assistant.worker is None
        alice = await make_user(app, "alice")
        note = await app.call("create_note", {"title": "Boiler", "body": "the plumber comes in May"}, alice)
        found = await app.call("search_notes", {"query": "plumber"}, alice)
        assert found["mode"] == "keyword" and [hit["id"] for hit in found["items"]] == [note["id"]]
        health = (await app.assistant.status.check()).to_dict()
        assert health["semantic_search"] == {"on": False, "reason": app.db.vectors.reason}
        assert fake.embed_calls == 0 or all("input" in b for b in fake.embed_bodies), "nothing stored by meaning"
    finally:
        await app.close()
    async with create_async_engine(fresh_url, poolclass=NullPool).connect() as conn:
        assert await conn.scalar(select(func.count()).select_from(NoteEmbedding)) == 0


def fable_db(command: str, url: str, tmp_path: Path) -> str:
    env = {**os.environ, "DATABASE_URL": url, "FABLE_DATA_DIR": str(tmp_path), "LLM_PROVIDER": "none"}
    done = subprocess.run([sys.executable, "-m", "fable_web.cli", "db", command], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=scaled(120), check=False)
    assert done.returncode == 0, done.stderr
    return done.stderr.splitlines()[-1]


async def test_a_self_test_that_never_finished_counts_as_a_crash_until_checked_again(
    fresh_url: str, tmp_path: Path
) -> None:
    """Another process ran the test and died in it (its row still says ``running``): the next one
    does not run it again (it could take the server down again); ``fable db check`` does."""
    on = "search by meaning: on (the vector extension passed its self-test)"
    assert fable_db("upgrade", fresh_url, tmp_path) == on
    await sql(fresh_url, "UPDATE vector_checks SET state = 'running'")
    said = fable_db("upgrade", fresh_url, tmp_path)
    assert said.startswith("search by meaning: off: the database's vector extension crashed in Fable's self-test")
    assert await sql(fresh_url, "SELECT state FROM vector_checks") == ["failed"]
    assert fable_db("upgrade", fresh_url, tmp_path) == said, "remembered"
    assert fable_db("check", fresh_url, tmp_path) == on


# Holds the write of the note titled 'Poison''s embedding in a sleep, where the test kills its backend
HOLD = (
    "CREATE FUNCTION hold_poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
    " IF EXISTS (SELECT 1 FROM notes WHERE id = NEW.note_id AND title = 'Poison') THEN PERFORM pg_sleep(60); END IF;"
    " RETURN NEW; END $$",
    "CREATE TRIGGER hold_poison BEFORE INSERT OR UPDATE ON note_embeddings FOR EACH ROW EXECUTE FUNCTION hold_poison()",
)


async def kill_held_backends(url: str, kills: list[int], stop: asyncio.Event) -> None:
    """SIGKILL every backend sleeping in the trigger, as an extension's crash would end it, until
    ``stop`` (never cancelled mid-connect: that would leave a connection half made)."""
    while not stop.is_set():
        try:
            pids = await sql(url, "SELECT pid FROM pg_stat_activity WHERE wait_event = 'PgSleep' LIMIT 1")
        except (DBAPIError, OSError):  # the server restarts after the last kill
            pids = [None]
        if pids[0] is not None:
            os.kill(int(str(pids[0])), signal.SIGKILL)
            kills.append(int(str(pids[0])))
        await asyncio.sleep(0.05)


async def test_a_write_that_kills_its_backend_pauses_embedding_and_is_given_up_after_a_few(
    ai_settings: Settings, fake: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    with throwaway_server() as server:
        app = await Fable.open(ai_settings.model_copy(update={"database_url": server.url}))
        kills: list[int] = []
        stop = asyncio.Event()
        killer = asyncio.create_task(kill_held_backends(server.url, kills, stop))
        try:
            worker = app.assistant.worker if app.assistant is not None else None
            assert isinstance(worker, EmbeddingWorker)
            worker.lost_after = worker.retry_after = 0.1  # the first pauses (they double from there)
            await sql(server.url, *HOLD)
            alice = await make_user(app, "alice")
            with caplog.at_level(logging.WARNING, "fable_core.assistant.embeddings"):
                imported = await app.call("import_notes", {"notes": [
                    {"title": "Poison", "body": "its write kills the backend"},
                    *({"title": f"Fine {i}", "body": f"an ordinary note {i}"} for i in range(3))]}, alice)
                async with asyncio.timeout(scaled(120)):
                    await worker.idle(backfill=False)
            assert imported["created"] == 4
            async with app.db.transaction() as s:
                embedded = set((await s.execute(select(Note.title).join(NoteEmbedding))).scalars())
                failure = (await s.execute(select(EmbeddingFailure))).scalar_one()
                gave_up = (await s.execute(select(AppLog).where(AppLog.action == "embedding.gave_up"))).scalar_one()
                poison = await s.scalar(select(Note.id).where(Note.title == "Poison"))
            assert embedded == {"Fine 0", "Fine 1", "Fine 2"}
            assert failure.note_id == poison and failure.crashes == MAX_CRASHES
            assert gave_up.category == "error" and f"note {poison}" in (gave_up.error_message or "")
            assert MAX_CRASHES <= len(kills) <= MAX_CRASHES + 1, "the batch once, then the poison alone"
            pauses = [float(r.getMessage().split()[3]) for r in caplog.records
                      if r.getMessage().startswith("embedding paused for")]
            assert pauses == sorted(pauses) and len(pauses) >= MAX_CRASHES, "each pause as long as the last, or longer"
            assert await worker.backfill() == 0, "given up: the backfill leaves it alone"
        finally:
            stop.set()
            await asyncio.gather(killer, return_exceptions=True)
            await app.close()
        assert server.log().count("was terminated by signal 9") == len(kills)
