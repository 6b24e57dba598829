"""Protocol versions: 2025-06-18, 2025-11-25 and the SDK's sessionless default all work."""

from __future__ import annotations

import json
from dataclasses import replace

import httpx
import pytest
from mcp.shared.exceptions import MCPError
from support.mcp_clients import data, make_key
from support.pace import scaled

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_mcp.errors import protocol_errors
from fable_mcp.instructions import INSTRUCTIONS


def _sse_json(response: httpx.Response) -> dict:
    """The JSON-RPC message in a single-response SSE body (or a plain JSON body)."""
    if response.headers["content-type"].startswith("application/json"):
        return response.json()
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    return json.loads([d for d in data if d][-1])


async def test_2025_06_18_handshake_and_calls_over_http(mcp_base_url: str, fable: Fable, alice: Caller) -> None:
    key = await make_key(fable, alice)
    headers = {"authorization": f"Bearer {key}", "accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(base_url=mcp_base_url, headers=headers, timeout=scaled(30)) as http:
        init = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}})
        result = _sse_json(init)["result"]
        session = {"mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        initialized = await http.post("/mcp", headers=session,
                                      json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        listed = _sse_json(await http.post("/mcp", headers=session,
                                           json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        called = _sse_json(await http.post("/mcp", headers=session, json={
            "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "create_note", "arguments": {"title": "From 2025-06-18"}}}))
    assert result["protocolVersion"] == "2025-06-18"
    assert result["serverInfo"]["name"] == "fable" and result["instructions"] == INSTRUCTIONS
    caps = result["capabilities"]
    assert caps["resources"]["subscribe"] is True and {"tools", "prompts", "completions", "logging"} <= set(caps)
    assert initialized.status_code == 202
    assert {t["name"] for t in listed["result"]["tools"]} == {t.name for t in fable.registry.for_agents(
        replace(alice, credential="key"), fable.availability)}  # a key: no session-only tool
    assert json.loads(called["result"]["content"][0]["text"])["title"] == "From 2025-06-18"
    assert "structuredContent" not in called["result"]  # the text is the result (FABLE_MCP_STRUCTURED adds it)


@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
async def test_sdk_client_versions(connect, mode: str, version: str) -> None:
    async with connect(mode=mode) as client:
        assert client.protocol_version == version
        assert client.session.instructions == INSTRUCTIONS
        created = await client.call_tool("create_note", {"title": f"Over {version}"})
        read = await client.read_resource(f"fable://notes/{data(created)['id']}")
    assert read.contents[0].text.startswith(f"# Over {version}\n")


async def test_an_unexpected_error_outside_tool_calls_is_internal_and_says_no_more(caplog) -> None:
    """Without this the SDK answers a 2025 session with ``str(exc)`` (SQL, paths, values)."""

    @protocol_errors
    async def read_something() -> None:
        raise RuntimeError("password=hunter2 in /srv/fable/secret")

    with pytest.raises(MCPError) as failed:
        await read_something()
    assert failed.value.error.code == -32603
    assert "hunter2" not in failed.value.error.message and "logged" in failed.value.error.message
    assert "hunter2" in caplog.text
