"""docs/mcp.md stays true: its tool list is the registry's, its configs parse, its example runs."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from dataclasses import replace
from pathlib import Path

from support.mcp_clients import make_key
from support.pace import scaled

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.toolsets import ToolChoice
from fable_mcp.tools import offered
from fable_mcp.toolsdoc import update

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs/mcp.md"


def test_generated_tool_list_is_current(fable: Fable) -> None:
    text = DOC.read_text()
    assert update(text, fable.registry) == text, (
        "docs/mcp.md's tool list is stale: run .venv/bin/python -m fable_mcp.toolsdoc docs/mcp.md")
    for t in fable.registry:
        assert f"#### `{t.name}` — {t.title}" in text


def test_json_configs_in_the_doc_parse_and_name_fable_by_its_absolute_path() -> None:
    """A host does not run commands through the user's shell: ``fable`` is named by its absolute
    path, as the generated configs name it (tests/mcp/test_client_configs.py starts those)."""
    blocks = re.findall(r"```json\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert len(blocks) == 5  # Claude Desktop x3, Cursor, VS Code
    commands = []
    for block in blocks:
        config = json.loads(block)
        assert "mcpServers" in config or "servers" in config
        commands += [s["command"] for s in config.get("mcpServers", {}).values() if "command" in s]
    assert commands == ["/home/me/fable/.venv/bin/fable", "/home/me/fable/.venv/bin/fable", "npx",
                        "/home/me/fable/.venv/bin/fable"]
    assert "-- fable mcp" not in DOC.read_text()  # Claude Code's form too


async def test_the_scripted_agent_example_runs(mcp_base_url: str, fable: Fable, alice: Caller, call) -> None:
    env = {**os.environ, "FABLE_URL": f"{mcp_base_url}/mcp", "FABLE_API_KEY": await make_key(fable, alice)}

    async def run() -> str:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(ROOT / "examples/mcp_agent.py"), env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            async with asyncio.timeout(scaled(60)):
                out, err = await proc.communicate()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        assert proc.returncode == 0, err.decode()
        return out.decode()

    first, again = await run(), await run()  # the second run meets the conflict and reuses the note
    expected = ("has 2 tasks:\n  [todo] Book the room for Thursday\n  [todo] Send Sam the contract\n")
    by_key = replace(alice, credential="key")  # the agent comes with a key: no session-only tool
    listed = offered(fable, by_key, ToolChoice(fable.settings.fable_mcp_toolsets))
    assert first.startswith(f"connected: {len(listed)} tools\n") and first.endswith(expected)
    assert again.endswith(expected)
    titles = sorted(n["title"] for n in (await call("list_notes"))["items"])
    assert titles == ["Book the room for Thursday", "Meeting with Sam", "Send Sam the contract"]
