"""MCP test helpers: API keys for tests, SDK clients over HTTP, a recorder of resource updates,
and a client that starts a pasted stdio configuration the way a desktop host does."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from fable_core.identity.accounts import create_api_key, revoke_api_key
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller, Scope

from .pace import scaled

__all__ = ["FABLE_BIN", "HOST_PATH", "ResourceUpdates", "as_a_host_starts", "data", "http_client", "http_connect",
           "make_key", "make_revocable_key", "revoke_key"]

FABLE_BIN = Path(sys.executable).parent / "fable"


def data(result: types.CallToolResult) -> Any:
    """A tool result as a model reads it: the JSON of its one text block."""
    assert len(result.content) == 1 and isinstance(result.content[0], types.TextContent), result.content
    return json.loads(result.content[0].text)


async def make_key(fable: Fable, caller: Caller, scope: Scope = "write", toolsets: list[str] | None = None) -> str:
    async with fable.db.transaction() as session:
        _, key = await create_api_key(session, caller.user_id, f"test-{scope}", scope, toolsets)
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


def http_client(key: str | None) -> httpx2.AsyncClient:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    return httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(scaled(30), read=scaled(60)))


@asynccontextmanager
async def http_connect(url: str, key: str | None, **client_args: Any) -> AsyncIterator[Client]:
    async with (
        http_client(key) as http,
        Client(streamable_http_client(url, http_client=http), **client_args) as client,
    ):
        yield client


# The PATH Claude Desktop gives the servers it starts on macOS: the system's, no virtualenv, no
# ~/.local/bin. A config that says plain `fable` is not found there.
HOST_PATH = "/usr/bin:/bin"


@asynccontextmanager
async def as_a_host_starts(config: dict[str, Any], home: Path) -> AsyncIterator[Client]:
    """Connect to the one server of a pasted ``{"mcpServers": {...}}`` configuration the way
    Claude Desktop starts it: exactly its ``command`` and ``args``, from ``/``, in the host's own
    environment with the config's ``env`` on top. The host's environment is what the SDK's stdio
    client passes (``HOME``, ``LOGNAME``, ``SHELL``, ``TERM``, ``USER`` of this process; nothing
    else of the test's environment), with ``PATH`` cut to :data:`HOST_PATH` and ``HOME`` an
    empty directory, so the config must carry whatever else the server needs. One addition: a
    developer's ``PYTHONPATH`` (a checkout run against another checkout's virtualenv) is passed
    on when the tests run under one, so the server is the code under test; ``make test`` sets none.
    """
    [server] = config["mcpServers"].values()
    assert set(server) <= {"command", "args", "env"}, server
    env = {"PATH": HOST_PATH, "HOME": str(home)}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    params = StdioServerParameters(command=server["command"], args=server.get("args", []),
                                   env=env | server.get("env", {}), cwd="/")
    async with Client(params) as client:
        yield client
