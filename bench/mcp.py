"""MCP benchmark: tool calls over streamable HTTP and stdio at 100,000 notes, with the SDK client.

    python -m bench.mcp [--notes 100000] [--runs 500] [--duration 10] [--http-only] [--no-write]

Starts a fresh embedded PostgreSQL in a temporary directory (or uses ``--database-url``), bulk
loads synthetic notes (``bench.rest.bulk_load``), then:

- serves ``fable_mcp.http.create_app`` under uvicorn (uvloop, httptools) in its own process and
  measures ``read_note`` / ``create_note`` from one SDK client (each call one HTTP exchange),
  ``create_note`` throughput from 8 concurrent clients and ``read_note`` from 50 (counting
  errors), and the server's resident memory;
- starts ``fable mcp`` (stdio) several times to time ``initialize`` on the existing data, then
  measures the same calls over its pipe, and its memory.

``--http-only`` skips the stdio part (for comparing HTTP runs). Client and server share the
2-core machine. Results go to the "mcp" section of docs/benchmarks.md; one JSON line of the
headline figures goes to stderr, for collecting repeated runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import psutil
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from sqlalchemy import text

from bench.corpus import Corpus
from bench.report import write_section
from bench.rest import bulk_load
from bench.serving import free_port, serve_in_process, serve_option, start_servers, stop
from bench.stats import Latency, measure, reference_ms, wakeup_us
from fable_core.config import load_settings
from fable_core.runtime import Fable

__all__ = ["main"]

FABLE = Path(sys.executable).parent / "fable"


@dataclass
class Throughput:
    name: str
    clients: int
    calls: int
    seconds: float
    errors: int
    p50_ms: float
    p99_ms: float

    @property
    def rate(self) -> float:
        return self.calls / self.seconds

    def row(self) -> str:
        return (f"| {self.name} | {self.clients} | {self.calls:,} | {self.rate:,.0f} | "
                f"{self.p50_ms:.2f} | {self.p99_ms:.2f} | {self.errors} |")


@dataclass
class Results:
    notes: int
    load_seconds: float
    latencies: list[Latency] = field(default_factory=list)
    throughput: list[Throughput] = field(default_factory=list)
    startup_ms: list[float] = field(default_factory=list)
    http_rss_mb: float = 0.0
    stdio_rss_mb: float = 0.0
    read_cpu_ms: tuple[float, float] = (0.0, 0.0)  # HTTP read_note: client process, server process
    load: list[float] = field(default_factory=list)  # 1-minute load average, start and end
    speed: list[float] = field(default_factory=list)  # bench.stats.reference_ms, start and end
    wakeup: list[float] = field(default_factory=list)  # bench.stats.wakeup_us, start and end

    def latency(self, name: str) -> Latency:
        return next(lat for lat in self.latencies if lat.name == name)

    def p50(self, name: str) -> float:
        return self.latency(name).p50_ms

    def headline(self) -> dict[str, Any]:
        """The figures that repeated runs are compared on, for the stderr JSON line."""
        read, create = self.latency("HTTP read_note"), self.latency("HTTP create_note")
        return {"load": self.load, "speed_ms": self.speed, "read_p50_ms": read.p50_ms, "read_p99_ms": read.p99_ms,
                "create_p50_ms": create.p50_ms, "create8_per_s": self.tp("create_note", 8).rate,
                "server_cpu_ms_per_read": self.read_cpu_ms[1], "http_rss_mb": self.http_rss_mb}

    def tp(self, name: str, clients: int) -> Throughput:
        return next(t for t in self.throughput if t.name == name and t.clients == clients)


# --- setup ------------------------------------------------------------------------------------


async def prepare(database_url: str, data_dir: Path, notes: int) -> tuple[str, list[int], float]:
    """Create the user 'bench' with a write key and ``notes`` notes; (key, note ids, seconds)."""
    from fable_core.accounts import create_api_key, create_user

    settings = load_settings({}, database_url=database_url, fable_data_dir=data_dir, llm_provider="none")
    fable = await Fable.open(settings)
    try:
        async with fable.db.transaction() as session:
            user = await create_user(session, "bench", None)
            _, key = await create_api_key(session, user.id, "bench", "write")
        seconds = await bulk_load(fable, user.id, Corpus(seed=11), notes)
        async with fable.db.engine.begin() as conn:
            await conn.execute(text("ANALYZE"))
            ids = list((await conn.execute(text("SELECT id FROM notes"))).scalars())
        return key, ids, seconds
    finally:
        await fable.close()


# --- clients ----------------------------------------------------------------------------------


@asynccontextmanager
async def http_client(url: str, key: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {key}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def stdio_params(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=str(FABLE), args=["mcp", "--user", "bench"], env=env)


async def checked(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        first = result.content[0]
        raise RuntimeError(first.text if isinstance(first, types.TextContent) else repr(first))
    structured: dict[str, Any] = result.structured_content  # a Fable tool's result is an object
    return structured


class Titles:
    """Fresh, distinct note titles (creates must not collide with the duplicate check)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def __call__(self) -> dict[str, Any]:
        words = "".join(self.rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(24))
        return {"title": f"{words[:8]} {words[8:16]} {words[16:]}", "body": "Written by bench.mcp.",
                "tags": ["bench/mcp"]}


async def one_client(name: str, client: Client, ids: list[int], runs: int) -> list[Latency]:
    rng, titles = random.Random(3), Titles(hash(name) % 10_000)
    picks = [rng.choice(ids) for _ in range(runs + 20)]
    return [
        await measure(f"{name} read_note", runs, lambda i: checked(client, "read_note", {"note_id": picks[i]})),
        await measure(f"{name} create_note", runs, lambda i: checked(client, "create_note", titles())),
        await measure(f"{name} list_notes (50)", runs // 2, lambda i: checked(client, "list_notes", {})),
    ]


async def read_cpu(client: Client, ids: list[int], runs: int, server: psutil.Process) -> tuple[float, float]:
    """CPU milliseconds per HTTP read_note spent by this (client) process and by the server's:
    where a call's time goes when client and server take turns on the cores."""
    def server_cpu() -> float:
        times = server.cpu_times()
        return times.user + times.system

    rng = random.Random(11)
    client_before, server_before = time.process_time(), server_cpu()
    for _ in range(runs):
        await checked(client, "read_note", {"note_id": rng.choice(ids)})
    return ((time.process_time() - client_before) * 1000 / runs, (server_cpu() - server_before) * 1000 / runs)


async def concurrent(name: str, tool: str, clients: list[Client], duration: float,
                     make_args: Callable[[], dict[str, Any]]) -> Throughput:
    """Each client calls ``tool`` back to back for ``duration`` seconds."""
    latencies: list[float] = []
    errors = 0
    stop = time.perf_counter() + duration

    async def loop(client: Client) -> None:
        nonlocal errors
        while time.perf_counter() < stop:
            started = time.perf_counter()
            try:
                await checked(client, tool, make_args())
            except Exception:  # noqa: BLE001 - counted: the target is zero
                errors += 1
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(loop(c) for c in clients))
    seconds = time.perf_counter() - started
    ms = sorted(s * 1000 for s in latencies)
    return Throughput(name, len(clients), len(ms), seconds, errors, statistics.median(ms),
                      ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))])


async def many_clients(url: str, key: str, count: int) -> tuple[list[Client], Callable[[], Awaitable[None]]]:
    from contextlib import AsyncExitStack

    stack = AsyncExitStack()
    clients = [await stack.enter_async_context(http_client(url, key)) for _ in range(count)]
    return clients, stack.aclose


async def http_benchmarks(url: str, key: str, ids: list[int], runs: int, duration: float,
                          results: Results, server_pid: int) -> None:
    async with http_client(url, key) as client:
        results.latencies += await one_client("HTTP", client, ids, runs)
        results.read_cpu_ms = await read_cpu(client, ids, runs, psutil.Process(server_pid))
    rng, titles = random.Random(5), Titles(99)
    for tool, count in (("create_note", 8), ("read_note", 8), ("read_note", 50), ("create_note", 50)):
        clients, close = await many_clients(url, key, count)
        try:
            make = titles if tool == "create_note" else (lambda: {"note_id": rng.choice(ids)})
            results.throughput.append(await concurrent(tool, tool, clients, duration, make))
        finally:
            await close()


async def stdio_benchmarks(env: dict[str, str], ids: list[int], runs: int, starts: int,
                           results: Results) -> None:
    for _ in range(starts):
        started = time.perf_counter()
        async with Client(stdio_params(env), mode="legacy"):
            results.startup_ms.append((time.perf_counter() - started) * 1000)
    async with Client(stdio_params(env)) as client:
        results.latencies += await one_client("stdio", client, ids, runs)
        children = [p for p in psutil.Process().children() if "mcp" in " ".join(p.cmdline())]
        results.stdio_rss_mb = max((p.memory_info().rss for p in children), default=0) / 2**20


async def run(args: argparse.Namespace, database_url: str, data_dir: Path) -> Results:
    load_before = os.getloadavg()[0]
    key, ids, seconds = await prepare(database_url, data_dir, args.notes)
    results = Results(len(ids), seconds, load=[load_before])
    port = free_port()
    server = start_servers("bench.mcp", database_url, port, "/.well-known/oauth-protected-resource")[0]
    url = f"http://127.0.0.1:{port}/mcp"
    results.speed.append(reference_ms())
    results.wakeup.append(wakeup_us())
    try:
        await http_benchmarks(url, key, ids, args.runs, args.duration, results, server.pid)
        results.http_rss_mb = psutil.Process(server.pid).memory_info().rss / 2**20
    finally:
        stop([server])
    env = {"DATABASE_URL": database_url, "FABLE_DATA_DIR": str(data_dir), "LLM_PROVIDER": "none",
           "FABLE_LOG_LEVEL": "warning", "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")}
    if not args.http_only:
        await stdio_benchmarks(env, ids, args.runs, args.starts, results)
    results.load.append(os.getloadavg()[0])
    results.speed.append(reference_ms())
    results.wakeup.append(wakeup_us())
    return results


# --- report -----------------------------------------------------------------------------------


def render(r: Results) -> str:
    cpu = f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}"
    startup = statistics.median(r.startup_ms) if r.startup_ms else float("nan")
    create8 = r.tp("create_note", 8)
    zero_errors = all(t.errors == 0 for t in r.throughput if t.clients == 50)
    checks = [
        ("read_note p50, HTTP, one client", f"{r.p50('HTTP read_note'):.2f} ms", "< 3 ms",
         r.p50("HTTP read_note") < 3),
        ("create_note, HTTP, 8 clients", f"{create8.rate:,.0f} calls/s", ">= 300 calls/s", create8.rate >= 300),
        ("errors at 50 concurrent clients", str(sum(t.errors for t in r.throughput if t.clients == 50)),
         "0", zero_errors),
        ("`fable mcp` ready to answer initialize (p50 of starts)", f"{startup:,.0f} ms", "< 1,500 ms",
         startup < 1500),
        ("server memory (RSS), HTTP", f"{r.http_rss_mb:.0f} MB", "< 150 MB", r.http_rss_mb < 150),
        ("server memory (RSS), stdio", f"{r.stdio_rss_mb:.0f} MB", "< 150 MB", r.stdio_rss_mb < 150),
    ]
    if not r.startup_ms:  # --http-only
        checks = [c for c in checks if "stdio" not in c[0] and "fable mcp" not in c[0]]
    return "\n".join([
        "## MCP",
        "",
        (f"`python -m bench.mcp`: {r.notes:,} notes bulk-loaded into a fresh embedded PostgreSQL "
         f"(in {r.load_seconds:.0f} s); the official SDK client (`mcp.Client`, default protocol "
         "2026-07-28 over HTTP) calling `fable_mcp.http.create_app` under uvicorn (uvloop, "
         "httptools) in another process with a bearer API key, and `fable mcp` over stdio. "
         f"Client, server and PostgreSQL share the machine: {cpu}; its 1-minute load average "
         f"was {r.load[0]:.1f} at the start and {r.load[-1]:.1f} at the end (above 2, other work "
         "competed for the cores and every figure below is inflated by it). The machine's speed "
         f"drifts by up to 2x even when it is idle: the reference workload (`bench.stats.reference_ms`) "
         f"took {r.speed[0]:.1f} ms before the HTTP runs and {r.speed[-1]:.1f} ms at the end (9.5 ms "
         "to 17 ms seen here), and a round trip between two processes "
         f"(`bench.stats.wakeup_us`, median) {r.wakeup[0]:.0f} and {r.wakeup[-1]:.0f} us (20-150 us "
         "seen here; each call crosses processes several times)."),
        "",
        "One client, calls one after another:",
        "",
        "| Call | Samples | p50 ms | p99 ms | mean ms |",
        "|---|---|---|---|---|",
        *[lat.row() for lat in r.latencies],
        "",
        (f"CPU per HTTP read_note: {r.read_cpu_ms[0]:.2f} ms in the client process (the SDK client "
         f"and its HTTP stack), {r.read_cpu_ms[1]:.2f} ms in the server process (uvicorn, the "
         "SDK's streamable-HTTP transport, Fable's dispatcher and the tool; the core section shows "
         "the dispatcher's read_note alone). One call waits for both in turn."),
        "",
        ("Concurrent clients over HTTP (each its own SDK client and session, calling back to back; "
         "all clients run in one Python process, which is itself a bottleneck on 2 cores):"),
        "",
        "| Tool | Clients | Calls | Calls/s | p50 ms | p99 ms | Errors |",
        "|---|---|---|---|---|---|---|",
        *[t.row() for t in r.throughput],
        "",
        ("`fable mcp` from spawn to the `initialize` answer, on the existing database: "
         + (", ".join(f"{ms:,.0f}" for ms in r.startup_ms) + " ms." if r.startup_ms else "not measured.")),
        "",
        "| Target | Measured | Goal | Met |",
        "|---|---|---|---|",
        *[f"| {name} | {got} | {goal} | {'yes' if ok else '**no**'} |" for name, got, goal, ok in checks],
        "",
        ("For scale, a popular Markdown MCP knowledge server measured on this machine over stdio at "
         "2,000 notes: 266 ms p50 per write (3.5 writes/s), 41 ms per read, 30 ms per search, "
         "4.3 s cold start, 421 MB resident."),
        "",
        _READING,
    ])


_READING = """How to read these numbers: every MCP call is the core dispatcher call (see the core section:
the same read_note costs most of its time there, in database round trips) plus the SDK's
framing on both ends, plus for HTTP one request through uvicorn and the bearer key's check
(kept in memory for 2 s per process). Every request, over HTTP and stdio, goes through the
SDK's transport (a fast path beside it was measured and removed: see "Direct path" below). stdio
read_note minus the core's dispatcher read_note is the MCP layer; HTTP minus stdio is the
transport. `fable mcp`'s start is mostly Python imports (the MCP SDK's protocol models and
SQLAlchemy: about 1.6 s of CPU on this machine); the database opens in the background
meanwhile. Rerun `python -m bench.mcp` on an otherwise idle machine to check the targets."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.mcp", description=__doc__.split("\n\n")[0])
    p.add_argument("--notes", type=int, default=100_000)
    p.add_argument("--runs", type=int, default=500, help="timed calls per measured tool")
    p.add_argument("--duration", type=float, default=10, help="seconds per concurrent run")
    p.add_argument("--starts", type=int, default=5, help="stdio cold starts to time")
    p.add_argument("--database-url", help="use this database instead of a fresh embedded one")
    p.add_argument("--no-write", action="store_true", help="print, do not update docs/benchmarks.md")
    p.add_argument("--http-only", action="store_true", help="skip the stdio measurements")
    serve_option(p)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    if args.serve:
        from fable_mcp.http import create_app

        serve_in_process(args.database_url, args.serve, create_app)
        return 0
    with tempfile.TemporaryDirectory(prefix="fable-bench-mcp-") as tmp:
        database_url = args.database_url
        if not database_url:  # this process holds the embedded server for the whole run
            from fable_core.db.embedded import start_embedded

            database_url = start_embedded(Path(tmp) / "pg")
        results = asyncio.run(run(args, database_url, Path(tmp)))
    markdown = render(results)
    print(markdown)
    if not args.no_write:
        write_section("mcp", markdown)
    print(json.dumps(results.headline()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
