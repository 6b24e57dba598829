"""Every stdio configuration Fable generates starts a working server when pasted into Claude
Desktop: the API-key answer's (which the Settings page shows; the browser test starts the one on
the page) and ``fable mcp --print-config``'s, local and remote. Each is started the way the host
starts it (``support.mcp_clients.as_a_host_starts``: command, args and env only, with the host's
own small environment), then initialised and asked for its tools over the SDK's stdio client.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.mcp_clients import FABLE_BIN, as_a_host_starts, make_key
from support.pace import scaled
from support.servers import serve
from support.users import PASSWORD

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app

pytestmark = pytest.mark.slow


async def fable_output(*argv: str, env: dict[str, str], cwd: Path | None = None) -> str:
    """stdout of ``fable ARGV`` run with ``env`` over this environment; fails on a non-zero exit."""
    proc = await asyncio.create_subprocess_exec(
        str(FABLE_BIN), *argv, env={**os.environ, **env}, cwd=cwd, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    async with asyncio.timeout(scaled(60)):
        out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return out.decode()


def offered_names(fable: Fable, caller: Caller) -> list[str]:
    """What the caller is offered with no model configured (as in every server these tests start)."""
    return [t.name for t in fable.registry.for_agents(caller, fable.availability)]


async def tool_names(config: dict[str, Any], home: Path) -> list[str]:
    async with as_a_host_starts(config, home) as client:
        return [t.name for t in (await client.list_tools()).tools]


async def test_the_api_key_answers_stdio_config_starts_the_bridge(fable: Fable, tmp_path: Path) -> None:
    async with serve(create_app(fable)) as url:
        async with httpx.AsyncClient(base_url=url, headers={"origin": url}) as browser:
            r = await browser.post("/api/auth/register", json={"username": "ada", "password": PASSWORD})
            assert r.status_code == 201, r.text
            created = (await browser.post("/api/api-keys", json={"name": "Claude Desktop"})).json()
        config = created["mcp_config"]["stdio"]
        server = config["mcpServers"]["fable"]
        assert Path(server["command"]).is_absolute() and Path(server["command"]).name == "fable"
        assert server["args"] == ["mcp", "--remote", f"{url}/mcp"]
        # what is offered hangs on the role, and on the credential: the bridge's remote knows it by its key
        first_user = Caller(user_id=1, username="ada", role="admin", credential="key")
        assert await tool_names(config, tmp_path) == offered_names(fable, first_user)


async def test_print_config_starts_a_local_server_on_the_same_data(
    fable: Fable, alice: Caller, stdio_env: dict[str, str], call, tmp_path: Path,
) -> None:
    """Printed in a shell with the settings exported (the test database, a data directory, no
    LLM): the config carries them, so the server the host starts uses the same data."""
    config = json.loads(await fable_output("mcp", "--print-config", "--user", "alice", env=stdio_env))
    server = config["mcpServers"]["fable"]
    assert Path(server["command"]).is_absolute() and server["args"] == ["mcp", "--user", "alice"]
    assert server["env"]["FABLE_DATA_DIR"] == stdio_env["FABLE_DATA_DIR"]
    assert server["env"]["DATABASE_URL"] == stdio_env["DATABASE_URL"]
    async with as_a_host_starts(config, tmp_path) as client:
        tools = (await client.list_tools()).tools
        created = await client.call_tool("create_note", {"title": "From Claude Desktop"})
    assert [t.name for t in tools] == offered_names(fable, alice)
    assert not created.is_error
    assert [n["title"] for n in (await call("list_notes"))["items"]] == ["From Claude Desktop"]  # alice's


async def test_print_config_without_user_names_the_only_account_or_asks_which(
    fable: Fable, alice: Caller, bob: Caller, stdio_env: dict[str, str],
) -> None:
    """Issue 37 item 11: without ``--user`` on an instance of several accounts the printed config
    failed at its first start; now the command says so at once, naming them, and prints nothing."""
    proc = await asyncio.create_subprocess_exec(
        str(FABLE_BIN), "mcp", "--print-config", env={**os.environ, **stdio_env}, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    async with asyncio.timeout(scaled(60)):
        out, err = await proc.communicate()
    assert proc.returncode == 1 and out == b""
    said = err.decode()
    assert "several accounts" in said and "alice" in said and "bob" in said and "--user NAME" in said


async def test_print_config_for_the_remote_bridge(
    mcp_base_url: str, fable: Fable, alice: Caller, tmp_path: Path,
) -> None:
    key = await make_key(fable, alice)
    config = json.loads(await fable_output("mcp", "--remote", f"{mcp_base_url}/mcp", "--print-config",
                                           env={"FABLE_API_KEY": key}))
    assert config["mcpServers"]["fable"]["env"] == {"FABLE_API_KEY": key}
    by_key = replace(alice, credential="key")
    assert await tool_names(config, tmp_path) == offered_names(fable, by_key)

    (tmp_path / "key").write_text(key)  # named relative to where it is printed: the config names it absolutely
    config = json.loads(await fable_output("mcp", "--remote", f"{mcp_base_url}/mcp", "--api-key-file", "key",
                                           "--print-config", env={}, cwd=tmp_path))
    server = config["mcpServers"]["fable"]
    assert "env" not in server and server["args"][-2:] == ["--api-key-file", str(tmp_path / "key")]
    assert await tool_names(config, tmp_path) == offered_names(fable, by_key)


async def test_print_config_carries_the_toolsets_and_the_server_offers_them(
    fable: Fable, alice: Caller, stdio_env: dict[str, str], tmp_path: Path,
) -> None:
    config = json.loads(await fable_output("mcp", "--print-config", "--user", "alice", "--toolsets",
                                           "default, calendar,log_work", env=stdio_env))
    server = config["mcpServers"]["fable"]
    assert server["args"] == ["mcp", "--user", "alice", "--toolsets", "default,calendar,log_work"]
    async with as_a_host_starts(config, tmp_path) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
    usable = fable.registry.for_agents(alice, fable.availability)
    assert {t.name for t in usable if t.group == "calendar"} <= listed and "log_work" in listed
    assert "subscribe_feed" not in listed and "list_toolsets" in listed


@pytest.mark.parametrize("argv", [
    ["mcp", "--toolsets", "notes,nope"],
    ["mcp", "--print-config", "--toolsets", "nope"],
    ["mcp", "--remote", "https://fable.example/mcp", "--toolsets", "notes"],
])
async def test_a_bad_toolsets_choice_is_one_clear_line(stdio_env: dict[str, str], argv: list[str]) -> None:
    proc = await asyncio.create_subprocess_exec(
        str(FABLE_BIN), *argv, env={**os.environ, **stdio_env}, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    async with asyncio.timeout(scaled(60)):
        out, err = await proc.communicate()
    assert proc.returncode != 0 and out == b""
    assert "nope" in err.decode() or "--remote" in err.decode(), err.decode()
    assert "Traceback" not in err.decode()
