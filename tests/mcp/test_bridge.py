"""``fable mcp --remote URL``: a stdio subprocess forwarding to a real uvicorn /mcp."""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from sqlalchemy import func, select
from support.mcp_clients import FABLE_BIN, ResourceUpdates, data, make_key, make_revocable_key, revoke_key
from support.pace import scaled
from support.servers import free_port, serve

from fable_core.db.models import Note
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_mcp.http import create_app
from fable_web.app import create_app as create_web_app


def _bridge(url: str, env: dict[str, str], *args: str) -> StdioServerParameters:
    return StdioServerParameters(command=str(FABLE_BIN), args=["mcp", "--remote", url, *args], env=env)


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_bridge_forwards_everything_to_the_remote(
    mcp_base_url: str, fable: Fable, alice: Caller, call, tmp_path: Path
) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(await make_key(fable, alice) + "\n")
    watched = await call("create_note", title="Watched")
    updates = ResourceUpdates()
    logged: list[tuple[str, str | None, dict]] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logged.append((params.level, params.logger, params.data))

    params = _bridge(f"{mcp_base_url}/mcp", {}, "--api-key-file", str(key_file))
    async with Client(params, mode="legacy", message_handler=updates, logging_callback=on_log) as client:
        tools = (await client.list_tools()).tools
        await client.set_logging_level("warning")  # forwarded: the remote filters
        created = await client.call_tool("create_note", {"title": "Through the bridge"})
        conflict = await client.call_tool("create_note", {"title": "Through the bridge"})
        await client.send_ping()
        resource = await client.read_resource(f"fable://notes/{data(created)['id']}")
        prompt = await client.get_prompt("daily_review", {})
        await client.subscribe_resource(f"fable://notes/{watched['id']}")
        await call("update_note", note_id=watched["id"], body="changed on the server")
        with anyio.fail_after(scaled(15)):
            await updates.arrived.wait()
        instructions = client.session.instructions
    assert sorted(t.name for t in tools) == sorted(t.name for t in fable.registry.for_agents(
        replace(alice, credential="key"), fable.availability))  # the remote knows it by its key
    assert data(created)["title"] == "Through the bridge"
    assert conflict.is_error and conflict.content[0].text.startswith("conflict: ")
    assert [(level, logger, data["tool"], data["type"]) for level, logger, data in logged] == [
        ("warning", "fable", "create_note", "conflict")]
    assert resource.contents[0].text.startswith("# Through the bridge")
    assert prompt.messages and instructions and "Tasks are notes" in instructions
    assert updates.uris == [f"fable://notes/{watched['id']}"]
    owners = {n["title"] for n in (await call("list_notes"))["items"]}
    assert "Through the bridge" in owners  # written as alice, on the remote


async def _run_bridge(url: str, env: dict[str, str]) -> tuple[int, str, str]:
    environ = {k: v for k, v in os.environ.items() if k != "FABLE_API_KEY"}
    proc = await asyncio.create_subprocess_exec(
        str(FABLE_BIN), "mcp", "--remote", url, env={**environ, **env},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(scaled(60)):
            stdout, stderr = await proc.communicate(b"")
    finally:
        if proc.returncode is None:  # a hung bridge must not outlive its test
            proc.kill()
            await proc.wait()
    return proc.returncode or 0, stdout.decode(), stderr.decode()


async def test_bridge_reports_a_refused_key(mcp_base_url: str) -> None:
    code, stdout, stderr = await _run_bridge(f"{mcp_base_url}/mcp", {"FABLE_API_KEY": "fable_0000_wrong"})
    assert code == 1 and stdout == ""
    assert "refused the API key (401)" in stderr and "Traceback" not in stderr


async def test_bridge_reports_a_remote_that_is_down() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    code, stdout, stderr = await _run_bridge(url, {"FABLE_API_KEY": "fable_0000_any"})
    assert code == 1 and stdout == "" and f"cannot reach the remote Fable at {url}" in stderr


async def test_bridge_needs_a_key() -> None:
    code, _, stderr = await _run_bridge("http://127.0.0.1:1/mcp", {})
    assert code == 1 and "needs an API key: set FABLE_API_KEY or pass --api-key-file" in stderr


async def test_bridge_reports_a_wrong_path(mcp_base_url: str, fable: Fable, alice: Caller) -> None:
    code, _, stderr = await _run_bridge(f"{mcp_base_url}/nope", {"FABLE_API_KEY": await make_key(fable, alice)})
    assert code == 1 and "no MCP endpoint" in stderr and "should end in /mcp" in stderr


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_bridge_outlives_a_remote_that_stops_and_restarts(fable: Fable, alice: Caller, call) -> None:
    """Down: the call in hand fails at once, saying why. Back (a new process that forgot the
    session): the next call works on a new session, with the subscription restored."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    watched = await call("create_note", title="Watched across a restart")
    updates = ResourceUpdates()

    first = serve(create_app(fable), port=port)
    await first.__aenter__()
    params = _bridge(url, {"FABLE_API_KEY": await make_key(fable, alice)})
    async with Client(params, mode="legacy", message_handler=updates) as client:
        try:
            await client.subscribe_resource(f"fable://notes/{watched['id']}")
            assert not (await client.call_tool("list_notes", {"limit": 1})).is_error
        finally:
            await first.__aexit__(None, None, None)
        with anyio.fail_after(scaled(20)), pytest.raises(MCPError) as down:
            await client.call_tool("list_notes", {"limit": 1})
        assert f"cannot reach the remote Fable at {url}" in down.value.error.message
        async with serve(create_app(fable), port=port):
            with anyio.fail_after(scaled(20)):
                again = await client.call_tool("create_note", {"title": "After the restart"})
            assert data(again)["title"] == "After the restart"
            await call("update_note", note_id=watched["id"], body="changed after the restart")
            with anyio.fail_after(scaled(15)):
                await updates.arrived.wait()
    assert updates.uris == [f"fable://notes/{watched['id']}"]
    async with fable.db.reading() as session:  # written once: only the refused request was repeated
        assert await session.scalar(select(func.count()).where(Note.title == "After the restart")) == 1


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_bridge_says_when_its_key_was_revoked(mcp_base_url: str, fable: Fable, alice: Caller) -> None:
    key, key_id = await make_revocable_key(fable, alice)
    async with Client(_bridge(f"{mcp_base_url}/mcp", {"FABLE_API_KEY": key}), mode="legacy") as client:
        assert (await client.list_tools()).tools
        await revoke_key(fable, alice, key_id)
        with anyio.fail_after(scaled(20)), pytest.raises(MCPError) as refused:
            await client.call_tool("list_notes", {})
    assert "refused the API key (401)" in refused.value.error.message


async def test_bridge_serves_listen_streams_to_2026_clients(mcp_base_url: str, fable: Fable, alice: Caller,
                                                            call) -> None:
    watched = await call("create_note", title="Listened to through the bridge")
    params = _bridge(f"{mcp_base_url}/mcp", {"FABLE_API_KEY": await make_key(fable, alice)})
    async with Client(params) as client:
        assert client.server_capabilities.resources is not None and client.server_capabilities.resources.subscribe
        async with client.listen(resource_subscriptions=[f"fable://notes/{watched['id']}"]) as stream:
            await call("update_note", note_id=watched["id"], body="changed on the server")
            with anyio.fail_after(scaled(15)):
                event = await anext(aiter(stream))
    assert event.uri == f"fable://notes/{watched['id']}"


async def test_bridge_reports_a_url_that_is_a_web_page_or_a_redirect(fable: Fable, alice: Caller) -> None:
    env = {"FABLE_API_KEY": await make_key(fable, alice)}
    async with serve(create_web_app(fable)) as base:
        page = await _run_bridge(f"{base}/", env)
        moved = await _run_bridge(f"{base}/mcp/", env)
    assert page[0] == 1 and "answered with a web page, not MCP: the URL should end in /mcp" in page[2]
    assert moved[0] == 1 and f"{base}/mcp/ redirects to {base}/mcp: use that URL" in moved[2]
