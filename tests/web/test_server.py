"""`fable serve` for real: a subprocess on 127.0.0.1 serving REST, MCP and the UI."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import make_url
from support.pace import scaled
from support.servers import FABLE, fable_serve, free_port
from support.users import PASSWORD

from fable_core.config import Settings


@pytest.fixture
def serve_env(settings: Settings, tmp_path: Path) -> dict[str, str]:
    return {"DATABASE_URL": settings.database_url or "", "FABLE_DATA_DIR": str(tmp_path),
            "FABLE_SECRET_KEY": "smoke-test-key", "LLM_PROVIDER": "none"}


@pytest.fixture
async def served(serve_env: dict[str, str]) -> AsyncIterator[tuple[str, list[str]]]:
    """``fable serve`` on a free port, serving; yields (its URL, the lines it printed)."""
    port = free_port()
    async with fable_serve(serve_env, "--port", str(port)) as lines:
        yield f"http://127.0.0.1:{port}", lines


async def test_fable_serve_end_to_end(served: tuple[str, list[str]], serve_env: dict[str, str]) -> None:
    """It says where the data is, then (on an empty instance) where to create the first account,
    then where it serves."""
    url, lines = served
    assert lines == [
        f"Fable data directory: {serve_env['FABLE_DATA_DIR']} (database: PostgreSQL at "
        f"{make_url(serve_env['DATABASE_URL']).render_as_string(hide_password=True)})\n",
        f"No accounts yet: open {url}/register to create the first one (it becomes the admin).\n",
        f"Fable is serving on {url} (web UI /, REST /api, MCP /mcp)\n",
    ]
    async with httpx.AsyncClient(base_url=url, headers={"origin": url}) as c:
        assert (await c.get("/api/health")).json()["database"]["status"] == "ok"
        r = await c.post("/api/auth/register", json={"username": "ada", "password": PASSWORD})
        assert r.status_code == 201 and r.json()["user"]["role"] == "admin"
        assert (await c.post("/api/notes", json={"title": "Over TCP"})).status_code == 200
        assert [n["title"] for n in (await c.get("/api/notes?limit=50")).json()["items"]] == ["Over TCP"]
        key = (await c.post("/api/api-keys", json={"name": "mcp"})).json()["key"]
        ui = await c.get("/notes/1")
        assert ui.status_code == 200 and ui.headers["content-type"].startswith("text/html")
    async with httpx.AsyncClient(base_url=url) as mcp:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "smoke", "version": "1"}}}
        headers = {"accept": "application/json, text/event-stream"}
        assert (await mcp.post("/mcp", json=init, headers=headers)).status_code == 401
        r = await mcp.post("/mcp", json=init, headers={**headers, "authorization": f"Bearer {key}"})
        assert r.status_code == 200 and "serverInfo" in r.text


async def test_a_port_in_use_is_reported_before_anything_starts(serve_env: dict[str, str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = await asyncio.create_subprocess_exec(
            FABLE, "serve", "--port", str(port), env={**os.environ, **serve_env},
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        async with asyncio.timeout(scaled(60)):
            out, err = await proc.communicate()
    assert proc.returncode == 1 and out == b""
    assert err.decode().splitlines()[1:] == [
        f"error: unavailable: port {port} on 127.0.0.1 is in use (another Fable?): stop it, or pick another "
        "port with --port or FABLE_PORT"]


async def test_on_every_interface_the_first_account_link_is_one_that_opens(serve_env: dict[str, str]) -> None:
    """Bound to 0.0.0.0 with no public URL set, the printed link is the loopback one (Fable answers
    only to localhost then): http://0.0.0.0:PORT would be refused as a host it does not serve."""
    port = free_port()
    async with fable_serve(serve_env, "--host", "0.0.0.0", "--port", str(port)) as lines:
        [link] = [line.split("open ")[1].split()[0] for line in lines if line.startswith("No accounts yet")]
        assert link == f"http://127.0.0.1:{port}/register"
        async with httpx.AsyncClient() as client:
            page = await client.get(link)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert lines[-1] == (f"Fable is serving on http://127.0.0.1:{port} (web UI /, REST /api, MCP /mcp; "
                         f"listening on 0.0.0.0 port {port})\n")
