"""Protocol 2026-07-28 errors. A tool that relies on a client capability (``client_needs``) is
refused, before it runs, to an MCP client that did not declare it: error -32021 naming the missing
capability and, over HTTP, status 400 (SEP-2575). No Fable tool needs one yet: these tests register
their own. A resource not found is -32602 with its URI (SEP-2164)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel
from starlette.requests import Request
from support.pace import scaled
from support.servers import serve

from fable_core.runtime import Fable
from fable_core.tools import Context, Registry, tool
from fable_core.tools.caller import Caller
from fable_mcp.http import create_app
from fable_mcp.server import build_server

VERSION = "2026-07-28"
ran: list[str] = []
registry = Registry()


class Asked(BaseModel):
    asked: bool = True


@tool(group="test", title="Ask the client's model", scope="read", registry=registry, client_needs=("sampling",))
async def ask_client_model(ctx: Context) -> Asked:
    """Would ask the client to sample."""
    ran.append("ask_client_model")
    return Asked()


@pytest.fixture
def local(fable: Fable) -> Fable:
    ran.clear()
    return Fable(fable.settings, fable.db, registry=registry)


@pytest.fixture
async def url(local: Fable, alice: Caller) -> AsyncIterator[str]:
    caller = replace(alice, surface="mcp")

    async def admit(request: Request) -> Caller:
        return caller

    async with serve(create_app(local, authenticate=admit)) as base:
        yield base + "/mcp"


async def _post(url: str, method: str, name: str, params: dict[str, Any],
                capabilities: dict[str, Any]) -> httpx.Response:
    meta = {"io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": capabilities}
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {**params, "_meta": meta}}
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": VERSION,
               "mcp-method": method, "mcp-name": name}
    async with httpx.AsyncClient(timeout=scaled(30)) as http:
        return await http.post(url, json=body, headers=headers)


async def _call(url: str, capabilities: dict[str, Any]) -> httpx.Response:
    params = {"name": "ask_client_model", "arguments": {}}
    return await _post(url, "tools/call", "ask_client_model", params, capabilities)


async def test_an_undeclared_capability_is_400_and_32021_over_http(url: str) -> None:
    refused = await _call(url, {"roots": {}})
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert refused.json()["id"] == 7 and error["code"] == -32021
    assert error["data"] == {"requiredCapabilities": {"sampling": {}}} and "sampling" in error["message"]
    assert ran == []
    served = await _call(url, {"sampling": {}})
    assert served.status_code == 200 and ran == ["ask_client_model"], served.text
    missing = await _post(url, "resources/read", "fable://notes/999", {"uri": "fable://notes/999"}, {})
    assert missing.status_code == 400 and missing.json()["error"]["code"] == -32602, missing.text
    assert missing.json()["error"]["data"] == {"uri": "fable://notes/999"}


async def test_a_2025_session_without_sampling_is_refused_too(local: Fable, alice: Caller) -> None:
    async with Client(build_server(local, alice), mode="legacy") as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("ask_client_model", {})
    assert refused.value.error.code == -32021 and ran == []
    async with Client(build_server(local, alice), mode="legacy") as client:
        with pytest.raises(MCPError) as missing:
            await client.read_resource("fable://notes/999")
    assert missing.value.error.code == -32002 and missing.value.error.data == {"uri": "fable://notes/999"}  # 2025


def test_an_unknown_client_capability_is_refused_at_registration() -> None:
    with pytest.raises(ValueError, match="client_needs: unknown"):
        @tool(group="test", title="Bad", scope="read", registry=Registry(), client_needs=("telepathy",))
        async def bad(ctx: Context) -> Asked:
            """Never registered."""
            return Asked()
