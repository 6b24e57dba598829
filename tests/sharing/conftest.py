"""The sharing fixtures: a Fable whose assistant talks to a scripted fake Ollama (so every tool,
LLM ones included, can run), the whole web app (REST and MCP) on a real port, and the people of
alice's world (:mod:`support.matrix_world`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from support.fables import fable_with, ollama_at
from support.fake_llm import FakeLLM, ollama_app
from support.matrix_world import People
from support.mcp_clients import make_key
from support.servers import serve, serve_in_thread
from support.users import make_user

from fable_core.config import Settings
from fable_core.runtime import Fable
from fable_web.app import create_app


@pytest.fixture(scope="session")
def matrix_llm() -> FakeLLM:
    return FakeLLM()


@pytest.fixture(scope="session")
def matrix_llm_url(matrix_llm: FakeLLM) -> Iterator[str]:
    with serve_in_thread(ollama_app(matrix_llm)) as url:
        yield url


@pytest.fixture(scope="session")
async def matrix_fable(settings: Settings, matrix_llm_url: str) -> AsyncIterator[Fable]:
    async with fable_with(settings, **ollama_at(matrix_llm_url)) as fable:
        fable.availability.set("llm", True)
        yield fable


@pytest.fixture(scope="session")
async def app_url(matrix_fable: Fable) -> AsyncIterator[str]:
    """The whole web app (REST under /api, MCP at /mcp) on 127.0.0.1."""
    async with serve(create_app(matrix_fable)) as url:
        yield url


@pytest.fixture
async def people(matrix_fable: Fable) -> People:
    names = {"owner": "alice", "admin": "dave", "editor": "carol", "member": "erin", "viewer": "bob",
             "ex_member": "frank", "revoked": "hank", "stranger": "gina"}
    callers = {role: await make_user(matrix_fable, name, password=None) for role, name in names.items()}
    keys = {role: await make_key(matrix_fable, c) for role, c in callers.items()}
    alice = callers["owner"]
    group = await matrix_fable.call("create_group", {"name": "Household"}, alice)
    for role in ("member", "ex_member"):
        await matrix_fable.call("add_group_member", {"group_id": group["id"], "username": names[role]}, alice)
    await matrix_fable.call("remove_group_member", {"group_id": group["id"], "username": "frank"}, alice)
    conversations = {role: (await matrix_fable.call("create_conversation", {"title": "chat"}, c))["id"]
                     for role, c in callers.items()}
    events = {role: (await matrix_fable.call("create_event", {"title": "dentist", "start": "2026-12-07T09:00"},
                                             c))["id"] for role, c in callers.items()}
    return People(callers, keys, group["id"], conversations, events)


