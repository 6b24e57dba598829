"""What an agent reads: the bytes of ``tools/list`` per kind of caller, and the bytes of each
result in an agent's everyday workload (create, read, search, list).

    python -m bench.tokens [--notes 100] [--reference DIR] [--no-write]

Bytes, not time: a model pays for every byte it reads, on every conversation (tools/list) and
every call (results). Measured with the official SDK client in memory against a fresh embedded
PostgreSQL (the bytes are the same over stdio and HTTP): each message is counted as the server
sends it, compact JSON with no null fields. A token is about 4 bytes of this JSON. Results go to
the "tokens" section of docs/benchmarks.md.

``--reference DIR``: also measure the MCP project's reference servers installed there with
``npm install --prefix DIR @modelcontextprotocol/server-memory @modelcontextprotocol/server-filesystem``
(their tools/list, and the filesystem server writing and reading a note-sized file), side by side.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mcp import Client
from pydantic import BaseModel

from bench.harness.bench import Bench, Measured
from bench.harness.corpus import Corpus
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.report import Figure
from bench.harness.session import session
from fable_core.config import Settings, load_settings
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_mcp.server import build_server

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    notes: int = option(100, "notes the workload creates")
    database_url: str | None = option(None, "use this (empty) database instead of a fresh embedded one")
    reference: Path | None = option(None, "an npm prefix holding the reference MCP servers")


BUDGET = 30_000  # bytes of the default tools/list (issue 35; tests/mcp/test_tool_offer.py holds it)
MAX_TOOLS = 40
# a note of the size the external harness used (about 920 characters of Markdown)
BODY = ("## Kitchen renovation\n\nMeasured the wall for the new shelves: 2.4 m between the window and the "
        "corner. The plumber comes on Thursday at 9 to move the sink; ask about the pipe under the floor. "
        "See [[Budget 2026]] for the numbers.\n\n- [ ] order the oak boards (18 mm, 6 pieces)\n- [ ] pick "
        "a tile for the splashback\n- [x] empty the cupboards\n\nOpen questions: does the extractor fan "
        "need its own circuit, and can the old worktop be reused in the garage? Sam suggested the timber "
        "yard on the ring road; they cut to size for free above 50 euros. Keep the receipts in the "
        "*renovation* folder so that the insurance claim has everything in one place. The electrician "
        "can only come the week after, so the tiling waits until then.\n")
BEFORE = 78_730  # tools/list for every user before the budget, as measured when it was set


@dataclass
class Listing:
    caller: str
    tools: int
    bytes: int


@dataclass
class Results:
    notes: int
    listings: list[Listing] = field(default_factory=list)
    reference: list[str] = field(default_factory=list)  # lines about the reference servers
    note_read: int = 0  # bytes of read_note for a note whose body is BODY
    calls: dict[bool, dict[str, list[int]]] = field(default_factory=dict)  # structured -> tool -> bytes


def wire_bytes(message: BaseModel) -> int:
    """A result as the server sends it: compact JSON without null fields."""
    dumped = message.model_dump(mode="json", by_alias=True, exclude_none=True)
    return len(json.dumps(dumped, separators=(",", ":"), ensure_ascii=False).encode())


async def _users(fable: Fable) -> tuple[Caller, Caller]:
    from fable_core.identity.accounts import create_user

    async with fable.db.transaction() as session:
        admin = await create_user(session, "admin", None)
        user = await create_user(session, "user", None)
    return (Caller(user_id=admin.id, username=admin.username, role=admin.role, surface="mcp"),
            Caller(user_id=user.id, username=user.username, role=user.role, surface="mcp"))


async def listings(fable: Fable, admin: Caller, user: Caller) -> list[Listing]:
    cases: list[tuple[str, Caller, bool, list[str]]] = [
        ("admin, model answering", admin, True, ["default"]),
        ("user, model answering", user, True, ["default"]),
        ("user, no model", user, False, ["default"]),
        ("read-only key", replace(user, scope="read"), True, ["default"]),
        ("user, every tool (`all`)", user, True, ["all"]),
    ]
    found = []
    for label, caller, model, selection in cases:
        fable.availability.set("llm", model)  # what is listed; nothing here calls a model
        async with Client(build_server(fable, replace(caller, credential="key"), selection)) as client:
            result = await client.list_tools()
        found.append(Listing(label, len(result.tools), wire_bytes(result)))
    return found


async def workload(settings: Settings, fable: Fable, caller: Caller, notes: int, *,
                   structured: bool) -> dict[str, list[int]]:
    """Bytes per result for create, read, search and list, as one agent's session would call them."""
    local = Fable(settings.model_copy(update={"fable_mcp_structured": structured}), fable.db)
    corpus = Corpus(seed=7)
    sizes: dict[str, list[int]] = defaultdict(list)
    async with Client(build_server(local, caller)) as client:

        async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool(tool, arguments)
            if result.is_error:
                raise RuntimeError(f"{tool} failed: {result.content}")
            sizes[tool].append(wire_bytes(result))
            return dict(json.loads(result.content[0].text))  # type: ignore[union-attr]

        ids = [(await call("create_note", spec.arguments()))["id"] for spec in corpus.notes(notes)]
        for note_id in ids[: notes // 2]:
            await call("read_note", {"note_id": note_id})
        for _ in range(notes // 2):
            await call("search_notes", {"query": corpus.query()})
        await call("list_notes", {})
        await call("list_notes", {"tag": "project"})
        await call("list_tasks", {})
        if not structured:
            note = await call("create_note", {"title": "Kitchen renovation", "body": BODY})
            await call("read_note", {"note_id": note["id"]})
            sizes["reference read"] = [sizes["read_note"].pop()]
            sizes["create_note"].pop()
    return sizes


async def reference_servers(prefix: Path, body: str) -> list[str]:
    """tools/list of the reference memory and filesystem servers, and the filesystem server's
    write and read of a file holding ``body``."""
    import os

    from mcp.client.stdio import StdioServerParameters

    lines = []
    with tempfile.TemporaryDirectory(prefix="fable-bench-reference-") as tmp:
        for name in ("memory", "filesystem"):
            command = prefix / "node_modules" / ".bin" / f"mcp-server-{name}"
            package = json.loads((prefix / "node_modules" / "@modelcontextprotocol" / f"server-{name}"
                                  / "package.json").read_text())
            params = StdioServerParameters(command=str(command), args=[tmp] if name == "filesystem" else [],
                                           env={**os.environ, "MEMORY_FILE_PATH": f"{tmp}/memory.jsonl"})
            async with Client(params) as client:
                listed = await client.list_tools()
                line = (f"`@modelcontextprotocol/server-{name}` {package['version']}: tools/list "
                        f"{wire_bytes(listed):,} bytes for {len(listed.tools)} tools")
                if name == "filesystem":
                    path = f"{tmp}/note.md"
                    wrote = await client.call_tool("write_file", {"path": path, "content": body})
                    read = await client.call_tool("read_text_file", {"path": path})
                    line += (f"; writing a {len(body)}-character note answers {wire_bytes(wrote):,} bytes, "
                             f"reading it {wire_bytes(read):,}")
            lines.append(line + ".")
    return lines


async def run(settings: Settings, notes: int, reference: Path | None) -> Results:
    fable = await Fable.open(settings)
    try:
        admin, user = await _users(fable)
        results = Results(notes, await listings(fable, admin, user))
        # the same notes and calls for both modes, each in its own user's notes
        results.calls[False] = await workload(settings, fable, user, notes, structured=False)
        results.calls[True] = await workload(settings, fable, admin, notes, structured=True)
        results.note_read = results.calls[False].pop("reference read")[0]
        if reference is not None:
            results.reference = await reference_servers(reference, BODY)
        return results
    finally:
        await fable.close()


def figures(r: Results) -> list[Figure]:
    """Bytes, which no machine changes: tools/list for a regular user first."""
    regular = next(x for x in r.listings if x.caller == "user, model answering")
    return [Figure("tools/list, regular user", regular.bytes, "bytes"),
            *[Figure(f"tools/list, {x.caller}", x.bytes, "bytes") for x in r.listings if x is not regular],
            Figure("workload, compact", sum(sum(v) for v in r.calls[False].values()), "bytes"),
            Figure("workload, with structuredContent", sum(sum(v) for v in r.calls[True].values()), "bytes")]


def render(r: Results, machine: Machine, memory: PeakMemory | None = None) -> str:
    regular = next(x for x in r.listings if x.caller == "user, model answering")
    compact, structured = r.calls[False], r.calls[True]
    rows = []
    for tool in compact:
        c, s = statistics.mean(compact[tool]), statistics.mean(structured[tool])
        rows.append(f"| `{tool}` | {len(compact[tool])} | {c:,.0f} | {s:,.0f} | {s / c:.2f} |")
    total_c = sum(sum(v) for v in compact.values())
    total_s = sum(sum(v) for v in structured.values())
    return "\n".join([
        "## Tokens: what an agent reads",
        "",
        ("`python -m bench.tokens`: the official SDK client against Fable's MCP server in memory "
         "(the bytes are the same over stdio and HTTP), on a fresh embedded PostgreSQL. Each message "
         "is counted as the server sends it: compact JSON, no null fields. About 4 bytes make a token."),
        "",
        machine.describe() + " Bytes do not depend on the machine.",
        "",
        "`tools/list`, read by the client at the start of every conversation:",
        "",
        "| Caller | Tools | Bytes | ~Tokens |",
        "|---|---|---|---|",
        *[f"| {x.caller} | {x.tools} | {x.bytes:,} | {x.bytes // 4:,} |" for x in r.listings],
        "",
        (f"Budget for the default offer (every caller, any transport): {MAX_TOOLS} tools and {BUDGET:,} bytes "
         f"({'met' if regular.bytes <= BUDGET and regular.tools <= MAX_TOOLS else '**not met**'}: "
         f"{regular.tools} tools, {regular.bytes:,} bytes for a regular user). The rest is reached in the "
         "session with `list_toolsets`, `enable_toolset` and `find_tools` (docs/mcp.md, Toolsets); "
         f"before any budget every caller was sent {BEFORE:,} bytes for 48 tools. Admin-only tools "
         "are not offered to other users, tools that need a model only while one answers."),
        "",
        (f"Results of an agent's workload ({r.notes} notes created from the benchmark corpus, half "
         "of them read, as many searches, two lists and the task agenda): mean bytes per result, "
         "compact JSON text (the default) against `FABLE_MCP_STRUCTURED=true`, which adds each "
         "result as `structuredContent` beside its text:"),
        "",
        "| Tool | Calls | Compact text | Text + structuredContent | Ratio |",
        "|---|---|---|---|---|",
        *rows,
        "",
        (f"The whole workload: {total_c:,} bytes compact, {total_s:,} with structuredContent "
         f"({total_s / total_c:.2f}x). Clients in the style of Claude Desktop pass a tool result's "
         "text to the model and use `structuredContent` only if they validate results, so the "
         "default sends the text alone."),
        "",
        "Side by side, the MCP project's reference servers on this machine (`--reference`):",
        "",
        *([f"- {line}" for line in r.reference] or ["- not measured in this run."]),
        f"- Fable: reading a note with the same {len(BODY)}-character body answers {r.note_read:,} bytes.",
    ])


def _measure(o: Options) -> Measured[Results]:
    with tempfile.TemporaryDirectory(prefix="fable-bench-tokens-") as tmp, \
            session(Path(tmp), o.database_url) as bench:
        settings = load_settings({}, database_url=bench.database_url, fable_data_dir=Path(tmp),
                                 llm_provider="none")
        results = asyncio.run(run(settings, o.notes, o.reference))
    return bench.measured(results)


BENCH = Bench("tokens", __doc__, Options, _measure, render, figures, quick=Options(notes=20))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
