"""Fixtures for several Fable processes on one database: real ``fable serve`` subprocesses whose
stopping a test controls (the signal and the moment), on the test's database; ``cluster`` puts
several of them behind a round-robin load balancer (:mod:`support.rrproxy`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.fake_llm import FakeLLM, ollama_app
from support.rrproxy import RoundRobin
from support.servers import fable_process, free_port, serve_in_thread

from fable_core.config import Settings


@dataclass
class Served:
    url: str
    proc: asyncio.subprocess.Process
    lines: list[str]


@pytest.fixture
def serve_env(settings: Settings, tmp_path: Path, replicas_llm: tuple[FakeLLM, str]) -> dict[str, str]:
    replicas_llm[0].reset()
    return {"DATABASE_URL": settings.database_url or "", "FABLE_DATA_DIR": str(tmp_path),
            "FABLE_SECRET_KEY": "replicas-test-key", "LLM_PROVIDER": "ollama", "OLLAMA_URL": replicas_llm[1],
            "EMBED_MODEL": "fake-embed", "FABLE_SHUTDOWN_TIMEOUT": "4"}


@pytest.fixture
async def served(serve_env: dict[str, str]) -> AsyncIterator[Served]:
    """``fable serve`` on a free port, answering; the test signals it (killed at the end if not)."""
    async with start_serve(serve_env) as one:
        yield one


@asynccontextmanager
async def start_serve(env: dict[str, str], port: int | None = None) -> AsyncIterator[Served]:
    """A ``fable serve`` with ``env`` on ``port`` (else a free one), once it answers; killed at the
    end if the test has not stopped it."""
    async with fable_process(env, "--port", str(port or free_port())) as (proc, url, lines):
        yield Served(url, proc, lines)


@dataclass
class Cluster:
    url: str  # the load balancer's
    replicas: list[Served]
    proxy: RoundRobin


@pytest.fixture
def cluster(serve_env: dict[str, str]) -> Callable[..., AbstractAsyncContextManager[Cluster]]:
    """``async with cluster(n) as c``: n ``fable serve`` processes on the test's database and one
    data dir (as replicas share a volume), started together, behind a round-robin balancer at
    ``c.url``; ``env`` adds settings for every replica, ``each(url)`` those of the replica at ``url``."""

    @asynccontextmanager
    async def start(n: int = 2, each: Callable[[str], dict[str, str]] = lambda _: {},
                    **env: str) -> AsyncIterator[Cluster]:
        ports = [free_port() for _ in range(n)]
        async with contextlib.AsyncExitStack() as stack:
            replicas = await asyncio.gather(*(
                stack.enter_async_context(start_serve({**serve_env, **env, **each(f"http://127.0.0.1:{port}")}, port))
                for port in ports))
            proxy = RoundRobin([r.url for r in replicas])
            url = stack.enter_context(serve_in_thread(proxy))
            yield Cluster(url, list(replicas), proxy)

    return start


@pytest.fixture(scope="session")
def replicas_llm() -> Iterator[tuple[FakeLLM, str]]:
    """A fake Ollama (real HTTP, in a thread) for the served processes, and its URL."""
    fake = FakeLLM()
    with serve_in_thread(ollama_app(fake)) as url:
        yield fake, url
