"""`fable serve` for real: a subprocess on 127.0.0.1 serving REST, MCP and the UI."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from support.servers import free_port
from support.users import PASSWORD

from fable_core.config import Settings

FABLE = str(Path(sys.executable).with_name("fable"))


@pytest.fixture
async def served(settings: Settings, tmp_path: Path) -> AsyncIterator[tuple[str, list[str]]]:
    """Starts ``fable serve`` and waits for it to say it is serving; yields (url, its stderr lines)."""
    port = free_port()
    env = {**os.environ, "DATABASE_URL": settings.database_url or "", "FABLE_DATA_DIR": str(tmp_path),
           "FABLE_SECRET_KEY": "smoke-test-key", "LLM_PROVIDER": "none"}
    proc = await asyncio.create_subprocess_exec(
        FABLE, "serve", "--port", str(port), env=env, stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stderr is not None
    lines: list[str] = []
    try:
        async with asyncio.timeout(60):
            while not any("serving on" in line for line in lines):
                line = (await proc.stderr.readline()).decode()
                assert line, f"fable serve exited: {lines}"
                lines.append(line)
        async with httpx.AsyncClient(timeout=10) as c:   # uvicorn binds right after the message
            async with asyncio.timeout(30):
                while True:
                    try:
                        await c.get(f"http://127.0.0.1:{port}/api/health")
                        break
                    except httpx.ConnectError:
                        await asyncio.sleep(0.05)
        yield f"http://127.0.0.1:{port}", lines
    finally:
        proc.terminate()
        await proc.wait()


async def test_fable_serve_end_to_end(served: tuple[str, list[str]]) -> None:
    url, lines = served
    assert any(f"{url}/register" in line and "first" in line for line in lines), lines
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
