"""deploy/Caddyfile, run by a real Caddy in front of real Fable replicas on the test's database:
round robin reaches both, an SSE stream passes through as it is written, and a request a
draining replica refuses (503, ``Retry-After: 1``) is sent to the other one, POST included,
and runs once."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
import sys
import time
from pathlib import Path

import httpx
import pytest
from support.fake_llm import FakeLLM, Reply
from support.mcp_clients import make_key
from support.pace import scaled
from support.servers import serve
from support.stack import caddy, health_probe, replica

from fable_core.config import Settings
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app
from fable_web.drain import Drain


def _replica_env(settings: Settings, tmp: Path, **llm: str) -> dict[str, str]:
    """A replica's environment as compose.yaml's: secrets as files, one data directory for all."""
    (tmp / "database_url").write_text(f"{settings.database_url}\n")
    (tmp / "fable_secret_key").write_text("stack-test-key\n")
    return {"DATABASE_URL_FILE": str(tmp / "database_url"), "FABLE_SECRET_KEY_FILE": str(tmp / "fable_secret_key"),
            "FABLE_DATA_DIR": str(tmp / "data"), "EMBED_MODEL": "fake-embed", "TRUST_PROXY_HEADERS": "true",
            "FABLE_SHUTDOWN_TIMEOUT": "4", **llm}


@pytest.mark.slow
async def test_caddy_round_robins_both_replicas_streams_unbuffered_and_rides_out_a_stop(
    caddy_bin: Path, stack_llm: tuple[FakeLLM, str, str], settings: Settings, tmp_path: Path,
    fable: Fable, alice: Caller,
) -> None:
    fake, ollama, openai = stack_llm
    fake.reset()
    one = _replica_env(settings, tmp_path, LLM_PROVIDER="ollama", OLLAMA_URL=ollama)
    two = _replica_env(settings, tmp_path, LLM_PROVIDER="openai", OPENAI_BASE_URL=openai, OPENAI_MODEL="qwen3:8b")
    key = await make_key(fable, alice)
    async with contextlib.AsyncExitStack() as stack:
        a, b = await asyncio.gather(stack.enter_async_context(replica(one)), stack.enter_async_context(replica(two)))
        url = await stack.enter_async_context(caddy(caddy_bin, tmp_path, a.url[7:], b.url[7:]))
        client = await stack.enter_async_context(httpx.AsyncClient(
            base_url=url, timeout=scaled(10), headers={"authorization": f"Bearer {key}"}))
        providers = [(await client.get("/api/health")).json()["llm"]["provider"] for _ in range(6)]
        assert sorted(set(providers)) == ["ollama", "openai"]
        assert all(x != y for x, y in itertools.pairwise(providers))  # taking turns

        note = (await client.post("/api/notes", json={"title": "Plan", "body": "one two three"})).json()
        fake.plain_replies.append(Reply("first second third fourth", delay=0.25))
        async with client.stream("POST", f"/api/notes/{note['id']}/assist/stream",
                                 json={"instruction": "shorter"}) as stream:
            assert stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream")
            arrivals = [(line[7:], time.monotonic()) async for line in stream.aiter_lines()
                        if line.startswith("event: ")]
        tokens = [at for kind, at in arrivals if kind == "token"]
        assert len(tokens) == 4 and arrivals[-1][0] == "result"
        # each token reached the client as the model wrote it (0.25 s apart), not all at the end
        assert tokens[-1] - tokens[0] > 0.5

        # A rolling restart's first half: one replica gets SIGTERM while requests keep coming.
        # Not one fails, and each POST runs once (the other replica takes over).
        statuses: list[int] = []
        titles: list[str] = []

        async def post() -> None:
            titles.append(f"During {len(titles)}")
            statuses.append((await client.post("/api/notes", json={"title": titles[-1]})).status_code)

        deadline = time.monotonic() + scaled(30)
        a.proc.send_signal(signal.SIGTERM)
        while a.proc.returncode is None and time.monotonic() < deadline:
            await post()
            statuses.append((await client.get("/api/notes", params={"limit": 1})).status_code)
        await a.proc.wait()
        for _ in range(4):  # after it: the stopped replica refuses connections, retried on the other
            await post()
        listed = (await client.get("/api/notes", params={"limit": 200})).json()["items"]
    assert a.proc.returncode == 143 and set(statuses) == {200}
    assert sorted(n["title"] for n in listed if n["title"].startswith("During")) == sorted(titles)  # once each


async def test_a_request_a_draining_replica_refuses_runs_once_on_the_other(
    caddy_bin: Path, tmp_path: Path, fable: Fable, alice: Caller,
) -> None:
    draining = Drain(create_app(fable), grace=0)
    async with serve(draining) as stopping, serve(create_app(fable)) as running:
        await draining.start()
        async with caddy(caddy_bin, tmp_path, stopping[7:], running[7:]) as url:
            key = await make_key(fable, alice)
            async with httpx.AsyncClient(base_url=url, timeout=scaled(10),
                                         headers={"authorization": f"Bearer {key}"}) as c:
                created = [(await c.post("/api/notes", json={"title": f"Note {i}"})).status_code for i in range(4)]
                listed = await c.get("/api/notes", params={"limit": 50})
    assert created == [200] * 4  # each one the draining replica refused went to the other
    assert sorted(n["title"] for n in listed.json()["items"]) == [f"Note {i}" for i in range(4)]  # once each


async def test_the_image_health_check_passes_on_a_serving_replica_and_fails_on_a_draining_one(fable: Fable) -> None:
    draining = Drain(create_app(fable), grace=0)
    async with serve(draining) as url:
        port = url.rsplit(":", 1)[1]
        ok = await _run(sys.executable, "-c", health_probe(port))
        await draining.start()
        refused = await _run(sys.executable, "-c", health_probe(port))
    assert ok == (0, b"")
    assert refused[0] != 0 and b"503" in refused[1]


async def _run(*argv: str) -> tuple[int, bytes]:
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.DEVNULL,
                                                stderr=asyncio.subprocess.PIPE)
    _, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, err


async def test_a_replica_answers_the_proxy_health_check_asked_as_localhost_not_by_its_service_name(
    fable: Fable,
) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(create_app(fable)), base_url="http://fable1:8000") as c:
        assert (await c.get("/api/health")).status_code == 421  # Caddy's default Host: the upstream's address
        assert (await c.get("/api/health", headers={"host": "localhost"})).status_code == 200  # health_headers
