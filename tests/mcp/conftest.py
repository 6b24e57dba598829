"""The MCP fixtures: one ``connect`` over in-memory, stdio (``fable mcp``) and streamable HTTP.

``async with connect(as_=bob, scope="read") as client:`` yields an SDK ``Client`` talking to
Fable as that user. In memory the server is built for the caller; over stdio a subprocess of
``.venv/bin/fable mcp --user NAME`` runs against the test database; over HTTP a session-wide
uvicorn serves ``create_app(fable)`` and the client sends a real API key.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_servers import serve

from fable_core.accounts import create_api_key, revoke_api_key
from fable_core.caller import Caller, Scope
from fable_core.runtime import Fable
from fable_mcp.http import create_app
from fable_mcp.server import build_server

FABLE_BIN = Path(sys.executable).parent / "fable"
Connect = Callable[..., AbstractAsyncContextManager[Client]]


async def make_key(fable: Fable, caller: Caller, scope: Scope = "write") -> str:
    async with fable.db.transaction() as session:
        _, key = await create_api_key(session, caller.user_id, f"test-{scope}", scope)
    return key


async def make_revocable_key(fable: Fable, caller: Caller) -> tuple[str, int]:
    """A write key and its id, for tests that revoke it mid-session."""
    async with fable.db.transaction() as session:
        row, key = await create_api_key(session, caller.user_id, "revocable", "write")
    return key, row.id


async def revoke_key(fable: Fable, caller: Caller, key_id: int) -> None:
    async with fable.db.transaction() as session:
        await revoke_api_key(session, caller.user_id, key_id)
    fable.keys.forget()  # what the revoking REST call does in its process; others follow within TTL


class ResourceUpdates:
    """A client ``message_handler`` that keeps the URIs of ``notifications/resources/updated``."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self.arrived = anyio.Event()  # set by the first one

    async def __call__(self, message: object) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.uris.append(str(message.params.uri))
            self.arrived.set()


@pytest.fixture(scope="session")
async def mcp_base_url(fable: Fable) -> AsyncIterator[str]:
    """A uvicorn serving MCP over HTTP with bearer-key auth, for the whole session."""
    async with serve(create_app(fable)) as url:
        yield url


@pytest.fixture(scope="session")
def stdio_env(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return {
        "DATABASE_URL": database_url,
        "FABLE_DATA_DIR": str(tmp_path_factory.mktemp("fable-mcp-stdio")),
        "FABLE_LOG_LEVEL": "warning",
        "LLM_PROVIDER": "none",
        "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp"),
    }


def http_client(key: str | None) -> httpx2.AsyncClient:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    return httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60))


@asynccontextmanager
async def http_connect(url: str, key: str | None, **client_args: Any) -> AsyncIterator[Client]:
    async with (
        http_client(key) as http,
        Client(streamable_http_client(url, http_client=http), **client_args) as client,
    ):
        yield client


def _connector(kind: str, request: pytest.FixtureRequest, fable: Fable, alice: Caller) -> Connect:
    # Resolved now: fixtures cannot be requested from inside the running event loop.
    url = request.getfixturevalue("mcp_base_url") + "/mcp" if kind == "http" else ""
    env = request.getfixturevalue("stdio_env") if kind == "stdio" else {}

    @asynccontextmanager
    async def connect(as_: Caller | None = None, *, scope: Scope = "write", **client_args: Any
                      ) -> AsyncIterator[Client]:
        caller = replace(as_ or alice, surface="mcp", scope=scope)
        if kind == "memory":
            async with Client(build_server(fable, caller), **client_args) as client:
                yield client
        elif kind == "http":
            async with http_connect(url, await make_key(fable, caller, scope), **client_args) as client:
                yield client
        else:
            assert scope == "write", "a local stdio server always has its user's full scope"
            params = StdioServerParameters(command=str(FABLE_BIN), args=["mcp", "--user", caller.username or ""],
                                           env=env)
            async with Client(params, **client_args) as client:
                yield client

    return connect


@pytest.fixture(params=["memory", "stdio", "http"])
def connect(request: pytest.FixtureRequest, fable: Fable, alice: Caller) -> Connect:
    """Every transport: use for the behaviours each of them must get right."""
    return _connector(request.param, request, fable, alice)


@pytest.fixture(params=["memory", "http"])
def connect_fast(request: pytest.FixtureRequest, fable: Fable, alice: Caller) -> Connect:
    """In-memory and HTTP only: for logic the stdio subprocess adds nothing to."""
    return _connector(request.param, request, fable, alice)
