"""The production stack's parts run for real: Caddy (``.tools/caddy``, installed by
``scripts/install-test-tools``) with ``deploy/Caddyfile``, in front of real Fable replicas."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.fake_llm import FakeLLM, ollama_app, openai_app
from support.servers import serve_in_thread
from support.stack import CADDY


@pytest.fixture(scope="session")
def caddy_bin() -> Path:
    if not CADDY.exists():
        pytest.fail(f"{CADDY} is missing: run scripts/install-test-tools")
    return CADDY


@pytest.fixture(scope="session")
def stack_llm() -> Iterator[tuple[FakeLLM, str, str]]:
    """One scripted model served as Ollama and as an OpenAI-compatible server: the two replicas
    use one each, so /api/health (its ``llm.provider``) tells which replica answered."""
    fake = FakeLLM()
    with serve_in_thread(ollama_app(fake)) as ollama, serve_in_thread(openai_app(fake)) as openai:
        yield fake, ollama, f"{openai}/v1"
