"""REST benchmark: ``GET /api/notes?limit=50`` and ``POST /api/notes`` at 100,000 notes, with wrk.

    python -m bench.rest [--notes 100000] [--servers 1 2] [--duration 15] [--connections 32]

Starts a fresh embedded PostgreSQL in a temporary directory (or uses ``--database-url``), loads
synthetic notes (``bench.corpus``; by bulk insert, or ``--load dispatcher``), then serves the real app
(``fable_web.app.create_app`` under uvicorn with uvloop and httptools) on 127.0.0.1 from N
server processes sharing the port (SO_REUSEPORT, as stateless replicas would), and drives it
with wrk (Debian's package; installed with apt-get when missing and permitted) on the same
machine. Requests authenticate with an API key. Results go to the "rest" section of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from bench.core import load
from bench.corpus import Corpus
from bench.report import write_section
from bench.serving import free_port, serve_in_process, serve_option, start_servers, stop
from fable_core.caller import Caller
from fable_core.config import Settings, load_settings
from fable_core.runtime import Fable

__all__ = ["WrkResult", "main"]

_POST_LUA = """
local counter = 0
local letters = "abcdefghijklmnopqrstuvwxyz"
local function word(n)
  local t = {}
  for i = 1, n do local k = math.random(1, 26); t[i] = letters:sub(k, k) end
  return table.concat(t)
end
function setup(thread) thread:set("id", math.random(1, 1000000)) end
function init(args) math.randomseed(os.time() + id) end
request = function()
  counter = counter + 1
  local body = string.format('{"title": "%s %s %s", "body": "Written by wrk.", "tags": ["bench/rest"]}',
                             word(7), word(9), word(6))
  return wrk.format("POST", "/api/notes", nil, body)
end
"""


@dataclass
class WrkResult:
    name: str
    servers: int
    requests: int
    seconds: float
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    app_cpu_ms: float = 0.0
    pg_cpu_ms: float = 0.0
    load_average: float = 0.0  # of the machine (1 min) when the run ended: others' work shows here


def ensure_wrk() -> str:
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("installing wrk (apt-get)...", file=sys.stderr)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, stdout=subprocess.DEVNULL)
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        return "wrk"
    raise SystemExit("bench.rest needs wrk: sudo apt-get install wrk")


def _ms(value: str, unit: str) -> float:
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]


def parse_wrk(name: str, servers: int, out: str) -> WrkResult:
    def grab(pattern: str) -> re.Match[str]:
        match = re.search(pattern, out)
        if match is None:
            raise SystemExit(f"unexpected wrk output:\n{out}")
        return match

    total = grab(r"(\d+) requests in ([\d.]+)(\w+)")
    seconds = _ms(total.group(2), total.group(3)) / 1000
    p50, p99 = grab(r"50%\s+([\d.]+)(us|ms|s)\b"), grab(r"99%\s+([\d.]+)(us|ms|s)\b")
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    errors = (int(non2xx.group(1)) if non2xx else 0) + (sum(map(int, sock.groups())) if sock else 0)
    return WrkResult(name, servers, int(total.group(1)), seconds,
                     float(grab(r"Requests/sec:\s+([\d.]+)").group(1)),
                     _ms(*p50.groups()), _ms(*p99.groups()), errors)


def _cpu_by_pid(pids: list[int]) -> dict[int, float]:
    found = {}
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.NoSuchProcess:
            continue
        found[pid] = times.user + times.system
    return found


def _cpu_spent(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds between two snapshots, counting processes that started in between from zero
    and leaving out those that ended (their last figures are unknown)."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


def _postgres_pids(pg_dir: Path | None) -> list[int]:
    """The bench's own PostgreSQL (postmaster and backends); none for an external server."""
    pidfile = pg_dir / "postmaster.pid" if pg_dir else None
    if pidfile is None or not pidfile.exists():
        return []
    try:
        postmaster = psutil.Process(int(pidfile.read_text().split()[0]))
        return [postmaster.pid, *(c.pid for c in postmaster.children(recursive=True))]
    except (psutil.NoSuchProcess, ValueError):
        return []


def run_wrk(wrk: str, url: str, key: str, *, name: str, servers: list[int], duration: int,
            connections: int, script: Path | None = None, pg_dir: Path | None = None) -> WrkResult:
    """One wrk run; also the CPU time the app processes and PostgreSQL spent per request."""
    cmd = [wrk, "-t2", f"-c{connections}", f"-d{duration}s", "--latency", "--timeout", "10s",
           "-H", f"Authorization: Bearer {key}", "-H", "Content-Type: application/json"]
    if script is not None:
        cmd += ["-s", str(script)]
    app_before, pg_before = _cpu_by_pid(servers), _cpu_by_pid(_postgres_pids(pg_dir))
    out = subprocess.run([*cmd, url], check=True, capture_output=True, text=True).stdout
    result = parse_wrk(name, len(servers), out)
    result.load_average = os.getloadavg()[0]
    if result.requests:
        app, pg = _cpu_by_pid(servers), _cpu_by_pid(_postgres_pids(pg_dir))
        result.app_cpu_ms = _cpu_spent(app_before, app) * 1000 / result.requests
        result.pg_cpu_ms = _cpu_spent(pg_before, pg) * 1000 / result.requests
    return result


# --- orchestration --------------------------------------------------------------------------


async def bulk_load(fable: Fable, user_id: int, corpus: Corpus, count: int, batch: int = 2000) -> float:
    """Insert ``count`` corpus notes directly (no versions or link rows): the REST bench measures
    the API, and neither listing nor creating reads those. ``bench.core`` measures loading."""
    from datetime import date

    from sqlalchemy import insert

    from fable_core.db.models import Note, title_key

    started = time.perf_counter()
    specs = corpus.notes(count)
    while True:
        rows = []
        for spec in specs:
            task = dict(spec.task)
            if "due_date" in task:
                task["due_date"] = date.fromisoformat(task["due_date"])
            rows.append({"user_id": user_id, "title": spec.title, "title_key": title_key(spec.title),
                         "body": spec.body, "tags": spec.tags, "version": 1, **task})
            if len(rows) == batch:
                break
        if not rows:
            return time.perf_counter() - started
        async with fable.db.transaction() as session:
            await session.execute(insert(Note), rows)


async def prepare(settings: Settings, notes: int, workers: int, loader: str) -> tuple[str, str, float]:
    """Create a user with a write key and load ``notes`` notes; returns (db url, key, seconds)."""
    from sqlalchemy import text

    from fable_core.accounts import create_api_key, create_user

    fable = await Fable.open(settings)
    try:
        async with fable.db.transaction() as session:
            user = await create_user(session, "bench", None)
            _, key = await create_api_key(session, user.id, "bench", "write")
        caller = Caller(user_id=user.id, username=user.username, surface="internal")
        if loader == "bulk":
            seconds = await bulk_load(fable, user.id, Corpus(seed=7), notes)
        else:
            seconds = await load(fable, caller, Corpus(seed=7), notes, workers)
        async with fable.db.engine.begin() as conn:
            await conn.execute(text("ANALYZE"))
        return fable.db.url, key, seconds
    finally:
        await fable.close()


def run(args: argparse.Namespace, settings: Settings, pg_dir: Path | None) -> tuple[list[WrkResult], float]:
    wrk = ensure_wrk()
    url, key, load_seconds = asyncio.run(prepare(settings, args.notes, args.workers, args.load))
    results: list[WrkResult] = []
    with tempfile.TemporaryDirectory(prefix="fable-wrk-") as tmp:
        script = Path(tmp) / "post.lua"
        script.write_text(_POST_LUA)
        for servers in args.servers:
            port = free_port()
            procs = start_servers("bench.rest", url, port, "/api/health", servers)
            try:
                base = f"http://127.0.0.1:{port}"
                pids = [p.pid for p in procs]
                common = {"servers": pids, "duration": args.duration, "connections": args.connections,
                          "pg_dir": pg_dir}
                run_wrk(wrk, f"{base}/api/notes?limit=50", key, name="warmup", servers=pids,
                        duration=3, connections=args.connections)
                results.append(run_wrk(wrk, f"{base}/api/notes?limit=50", key,
                                       name="GET /api/notes?limit=50", **common))
                results.append(run_wrk(wrk, f"{base}/api/notes", key, name="POST /api/notes",
                                       script=script, **common))
            finally:
                stop(procs)
    return results, load_seconds


def render(results: list[WrkResult], notes: int, load_seconds: float, connections: int,
           loader: str) -> str:
    cpu = f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}"
    how = "bulk insert" if loader == "bulk" else "through the dispatcher"
    intro = (
        f"{notes:,} notes loaded ({how}, {load_seconds:.0f} s); then wrk (2 threads, {connections} "
        f"connections, 10 s timeout, same machine: {cpu}) against the real app (uvicorn + uvloop + httptools, "
        "API-key auth, embedded PostgreSQL on the same machine). `servers` is the number of app "
        "processes sharing the port (stateless replicas); CPU columns are the time the app "
        "processes and PostgreSQL spent per request; `load avg` is the machine's 1-minute load "
        "after the run (above 2, other work shared the 2 cores)."
    )
    header = ("| request | servers | requests | req/s | p50 ms | p99 ms | errors | app CPU ms/req "
              "| PostgreSQL CPU ms/req | load avg |")
    lines = ["## REST API (`python -m bench.rest`)", "", intro, "", header,
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| `{r.name}` | {r.servers} | {r.requests:,} | {r.rps:,.0f} | {r.p50_ms:.2f} | {r.p99_ms:.2f} | "
              f"{r.errors} | {r.app_cpu_ms:.2f} | {r.pg_cpu_ms:.2f} | {r.load_average:.1f} |" for r in results]
    best = max((r.rps for r in results if r.name.startswith("GET")), default=0.0)
    met = best >= 1000 and all(r.errors == 0 for r in results)
    verdict = (f"Target: at least 1,000 req/s for the list on 2 cores with no errors: "
               f"{'met' if met else 'NOT met'} (best {best:,.0f} req/s).")
    lines += ["", verdict]
    get = [r for r in results if r.name.startswith("GET") and r.app_cpu_ms]
    if get:
        cpu_ms = min(r.app_cpu_ms + r.pg_cpu_ms for r in get)
        ceiling = (f"CPU per list request ({cpu_ms:.1f} ms of app and PostgreSQL time, measured under "
                   f"the load shown) bounds what 2 idle cores could serve at about {2000 / cpu_ms:,.0f} req/s.")
        lines += ["", ceiling]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.rest", description=__doc__.split("\n\n")[0])
    p.add_argument("--notes", type=int, default=100_000)
    p.add_argument("--load", choices=("bulk", "dispatcher"), default="bulk",
                   help="insert notes directly (fast) or through the dispatcher like bench.core")
    p.add_argument("--workers", type=int, default=8, help="concurrent loaders (--load dispatcher)")
    p.add_argument("--servers", type=int, nargs="+", default=[1, 2], help="app processes to try")
    p.add_argument("--duration", type=int, default=15, help="seconds per wrk run")
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--database-url", help="use this database instead of a fresh embedded one")
    p.add_argument("--no-write", action="store_true", help="print, do not update docs/benchmarks.md")
    serve_option(p)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    if args.serve:
        from fable_web.app import create_app

        serve_in_process(args.database_url, args.serve, create_app)
        return 0
    with tempfile.TemporaryDirectory(prefix="fable-bench-") as tmp:
        database_url, pg_dir = args.database_url, None
        if not database_url:   # this process holds the embedded server for the whole run
            from fable_core.db.embedded import start_embedded

            pg_dir = Path(tmp) / "pg"
            database_url = start_embedded(pg_dir)
        settings = load_settings({}, database_url=database_url, fable_data_dir=Path(tmp),
                                 llm_provider="none", fable_db_pool_size=max(10, args.workers + 2))
        results, load_seconds = run(args, settings, pg_dir)
    markdown = render(results, args.notes, load_seconds, args.connections, args.load)
    print(markdown)
    if not args.no_write:
        write_section("rest", markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
