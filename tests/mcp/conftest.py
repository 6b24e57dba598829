"""The MCP fixtures: one ``connect`` over in-memory, stdio (``fable mcp``) and streamable HTTP.

``async with connect(as_=bob, scope="read") as client:`` yields an SDK ``Client`` talking to
Fable as that user; ``toolsets=[...]`` is the choice its key or ``fable mcp --toolsets`` makes,
else the server's (every tool, in tests: ``FABLE_MCP_TOOLSETS=all``). In memory the server is
built for the caller; over stdio a subprocess of
``.venv/bin/fable mcp --user NAME`` runs against the test database; over HTTP a session-wide
uvicorn serves ``create_app(fable)`` and the client sends a real API key.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from support.mcp_clients import FABLE_BIN, http_connect, make_key
from support.servers import serve

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller, Scope
from fable_mcp.http import create_app
from fable_mcp.server import build_server

Connect = Callable[..., AbstractAsyncContextManager[Client]]


@pytest.fixture(scope="session")
async def mcp_base_url(fable: Fable) -> AsyncIterator[str]:
    """A uvicorn serving MCP over HTTP with bearer-key auth, for the whole session."""
    async with serve(create_app(fable)) as url:
        yield url


@pytest.fixture(scope="session")
def stdio_env(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    # A developer's PYTHONPATH (a checkout run against another checkout's virtualenv) is passed
    # on, so the server is the code under test (and knows the migrations it applied).
    return {
        "DATABASE_URL": database_url,
        "FABLE_DATA_DIR": str(tmp_path_factory.mktemp("fable-mcp-stdio")),
        "FABLE_LOG_LEVEL": "warning",
        "LLM_PROVIDER": "none",
        "FABLE_MCP_TOOLSETS": "all",  # as the in-process servers' (tests/conftest.py)
        "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp"),
    } | ({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {})


def _connector(kind: str, request: pytest.FixtureRequest, fable: Fable, alice: Caller) -> Connect:
    # Resolved now: fixtures cannot be requested from inside the running event loop.
    url = request.getfixturevalue("mcp_base_url") + "/mcp" if kind == "http" else ""
    env = request.getfixturevalue("stdio_env") if kind == "stdio" else {}

    # how the server knows the client: an API key over HTTP (and in memory, which stands in for
    # it), the operator's own machine over stdio; what it offers depends on it (session-only tools)
    credential = "local" if kind == "stdio" else "key"

    @asynccontextmanager
    async def connect(as_: Caller | None = None, *, scope: Scope = "write", toolsets: list[str] | None = None,
                      **client_args: Any) -> AsyncIterator[Client]:
        caller = replace(as_ or alice, surface="mcp", scope=scope, credential=credential)
        if kind == "memory":
            async with Client(build_server(fable, caller, toolsets), **client_args) as client:
                yield client
        elif kind == "http":
            async with http_connect(url, await make_key(fable, caller, scope, toolsets), **client_args) as client:
                yield client
        else:
            assert scope == "write", "a local stdio server always has its user's full scope"
            chosen = ["--toolsets", ",".join(toolsets)] if toolsets is not None else []
            params = StdioServerParameters(command=str(FABLE_BIN),
                                           args=["mcp", "--user", caller.username or "", *chosen], env=env)
            async with Client(params, **client_args) as client:
                yield client

    connect.credential = credential  # type: ignore[attr-defined]
    return connect


@pytest.fixture(params=["memory", "stdio", "http"])
def connect(request: pytest.FixtureRequest, fable: Fable, alice: Caller) -> Connect:
    """Every transport: use for the behaviours each of them must get right."""
    return _connector(request.param, request, fable, alice)


@pytest.fixture(params=["memory", "http"])
def connect_fast(request: pytest.FixtureRequest, fable: Fable, alice: Caller) -> Connect:
    """In-memory and HTTP only: for logic the stdio subprocess adds nothing to."""
    return _connector(request.param, request, fable, alice)
