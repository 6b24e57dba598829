"""Start times of ``fable mcp`` (stdio) and ``fable serve``, with and without starting the
embedded PostgreSQL.

Each is timed from spawning the command on a data directory (no ``DATABASE_URL``: the embedded
server in ``DATA_DIR/pg``, as an install without configuration runs) to:

- ``fable mcp``: the answer to ``initialize`` (the 2025-11-25 handshake a desktop host does
  first), then the answer to a first ``tools/call`` (``list_notes``), which needs the database;
- ``fable serve``: the first 200 from ``GET /api/health``, which answers 200 only once the
  database does.

"database running": the data directory's server is already up (another process, here the
bench, holds it), so the command joins it. "database stopped": the server is not running, so
the command starts it (about 0.7 s of the total on the development machine) and stops it when
it exits; the bench stops it after every start as well, so that each start is cold and none is
left behind.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bench.harness.postgres import stop_postmaster
from bench.harness.serving import free_port

__all__ = ["FABLE", "Starts", "fable_env", "prepare_data_dir", "time_mcp", "time_one_mcp", "time_serve"]

FABLE = Path(sys.executable).parent / "fable"


@dataclass
class Starts:
    """Milliseconds of each start, per (command, database state)."""

    ready_ms: dict[str, list[float]] = field(default_factory=dict)  # initialize answer / health 200
    first_call_ms: dict[str, list[float]] = field(default_factory=dict)  # fable mcp: first tools/call


# A Python that may not cache bytecode compiles every module at every start: 0.3-0.5 s of
# ``fable mcp``'s. The machine these benches run on sets it; a person's does not.
_NOT_OURS = ("DATABASE_URL", "PYTHONDONTWRITEBYTECODE")


def fable_env(data_dir: Path, database_url: str | None = None) -> dict[str, str]:
    """The environment of a Fable on ``data_dir``: its embedded server, or ``database_url``; its
    Python caches bytecode as a person's does (the first start writes the caches, as the first
    start after an install does)."""
    env = {k: v for k, v in os.environ.items() if k not in _NOT_OURS}
    if database_url:
        env["DATABASE_URL"] = database_url
    return {**env, "FABLE_DATA_DIR": str(data_dir), "LLM_PROVIDER": "none", "FABLE_LOG_LEVEL": "warning",
            "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")}


def prepare_data_dir(data_dir: Path, user: str) -> None:
    """A data directory with a migrated database and ``user``, its server stopped afterwards."""
    subprocess.run([str(FABLE), "user", "create", user, "--password-stdin"], input=b"bench-password-1234\n",
                   env=fable_env(data_dir), check=True, stdout=subprocess.DEVNULL)
    stop_postmaster(data_dir / "pg")


async def time_mcp(data_dir: Path, user: str, label: str, count: int, starts: Starts, *, cold: bool) -> None:
    for _ in range(count):
        if cold:
            stop_postmaster(data_dir / "pg")
        await time_one_mcp(data_dir, ["--user", user], label, starts)
        if cold:
            stop_postmaster(data_dir / "pg")


async def time_one_mcp(data_dir: Path, args: list[str], label: str, starts: Starts) -> None:
    """One ``fable mcp ARGS`` on ``data_dir``: until its ``initialize`` answer, then its first call."""
    params = StdioServerParameters(command=str(FABLE), args=["mcp", *args], env=fable_env(data_dir))
    started = time.perf_counter()
    async with Client(params, mode="legacy") as client:
        starts.ready_ms.setdefault(label, []).append((time.perf_counter() - started) * 1000)
        result = await client.call_tool("list_notes", {"limit": 1})
        if result.is_error:
            raise RuntimeError(f"fable mcp: list_notes failed: {result.content}")
        starts.first_call_ms.setdefault(label, []).append((time.perf_counter() - started) * 1000)


def time_serve(data_dir: Path, label: str, count: int, starts: Starts, *, cold: bool) -> None:
    for _ in range(count):
        if cold:
            stop_postmaster(data_dir / "pg")
        port = free_port()
        started = time.perf_counter()
        process = subprocess.Popen([str(FABLE), "serve", "--port", str(port)], env=fable_env(data_dir),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_healthy(port, process)
            starts.ready_ms.setdefault(label, []).append((time.perf_counter() - started) * 1000)
        finally:
            process.terminate()
            process.wait(30)
            if cold:
                stop_postmaster(data_dir / "pg")


def _wait_healthy(port: int, process: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=2) as http:
        while True:
            try:
                if http.get(f"http://127.0.0.1:{port}/api/health").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"fable serve did not answer /api/health (exit status {process.poll()})")
            time.sleep(0.01)
