"""REST benchmark: ``GET /api/notes?limit=50`` and ``POST /api/notes`` at 100,000 notes, with wrk.

    python -m bench.rest [--notes 100000] [--servers 1 2] [--duration 15] [--connections 32]
                         [--loadgen auto|wrk|python]

Starts a fresh embedded PostgreSQL in a temporary directory (or uses ``--database-url``), loads
synthetic notes (``bench.harness.corpus``; by bulk insert, or ``--load dispatcher``), then serves the real app
(``fable_web.app.create_app`` under uvicorn with uvloop and httptools) on 127.0.0.1 from N
server processes sharing the port (SO_REUSEPORT, as stateless replicas would), and drives it
with wrk on the same machine. Requests authenticate with an API key; creates send corpus notes
(Markdown bodies of several hundred characters). Results go to the "rest" section of
docs/benchmarks.md.

The bench installs nothing. Without wrk (``sudo apt-get install wrk`` on Debian and Ubuntu) it
says so and measures with ``bench.harness.loadgen``, a Python load generator whose own CPU competes with
the app (lower figures, labelled as such); ``--loadgen wrk`` insists on wrk and exits with
status 3 (skipped) when it is missing.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from bench.core import load
from bench.harness.bench import Bench, Measured, Unavailable
from bench.harness.corpus import Corpus, describe_bodies
from bench.harness.loadgen import hammer
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.postgres import postgres_pids
from bench.harness.report import Figure
from bench.harness.serving import free_port, start_servers, stop
from bench.harness.session import session
from fable_core.config import Settings, load_settings
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

__all__ = ["BENCH", "Options", "WrkResult"]


@dataclass(frozen=True)
class Options:
    notes: int = 100_000
    load: str = option("bulk", "insert notes directly (fast) or through the dispatcher like bench.core",
                       choices=("bulk", "dispatcher"))
    workers: int = option(8, "concurrent loaders (--load dispatcher)")
    servers: list[int] = option([1, 2], "app processes to try")
    duration: int = option(15, "seconds per load run")
    connections: int = 32
    loadgen: str = option("auto", "wrk, or the Python generator; auto: wrk when installed (it is never installed "
                          "by the bench)", choices=("auto", "wrk", "python"))
    database_url: str | None = option(None, "use this database instead of a fresh embedded one")


WRK_HINT = "install it with `sudo apt-get install wrk` (Debian, Ubuntu) or from https://github.com/wg/wrk"


def post_bodies(count: int = 200, seed: int = 21) -> list[str]:
    """JSON object members (``"body": ..., "tags": [...]``) of ``count`` corpus notes: a POST
    adds a fresh title to one of them."""
    return [json.dumps({"body": spec.body, "tags": spec.tags})[1:-1] for spec in Corpus(seed=seed).notes(count)]


def post_lua(bodies: list[str]) -> str:
    """wrk's script for POST /api/notes: a random title and one of ``bodies`` per request."""
    table = ",\n".join(f"[==[{b}]==]" for b in bodies)
    return "local bodies = {\n" + table + "\n}\n" + _POST_LUA


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
  local body = string.format('{"title": "%s %s %s", ', word(7), word(9), word(6))
                 .. bodies[math.random(1, #bodies)] .. '}'
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


def find_wrk(loadgen: str) -> str | None:
    """wrk's path; None for the Python generator (asked for, or wrk missing with ``auto``)."""
    if loadgen == "python":
        return None
    found = shutil.which("wrk")
    if found is None:
        if loadgen == "wrk":
            raise Unavailable(f"wrk is not installed; {WRK_HINT}")
        print(f"bench.rest: wrk is not installed ({WRK_HINT}); measuring with the Python load "
              "generator instead (bench.harness.loadgen), whose figures are lower.", file=sys.stderr)
    return found


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


def run_wrk(wrk: str | None, url: str, key: str, *, name: str, servers: list[int], duration: int,
            connections: int, bodies: list[str] | None = None, script: Path | None = None,
            pg_dir: Path | None = None) -> WrkResult:
    """One run of wrk (or, with ``wrk`` None, of the Python generator); also the CPU time the app
    processes and PostgreSQL spent per request. POSTs when ``bodies`` are given."""
    app_before, pg_before = _cpu_by_pid(servers), _cpu_by_pid(postgres_pids(pg_dir))
    if wrk is None:
        result = _python_load(url, key, name, len(servers), duration, connections, bodies)
    else:
        cmd = [wrk, "-t2", f"-c{connections}", f"-d{duration}s", "--latency", "--timeout", "10s",
               "-H", f"Authorization: Bearer {key}", "-H", "Content-Type: application/json"]
        if bodies is not None and script is not None:
            script.write_text(post_lua(bodies))
            cmd += ["-s", str(script)]
        out = subprocess.run([*cmd, url], check=True, capture_output=True, text=True).stdout
        result = parse_wrk(name, len(servers), out)
    result.load_average = os.getloadavg()[0]
    if result.requests:
        app, pg = _cpu_by_pid(servers), _cpu_by_pid(postgres_pids(pg_dir))
        result.app_cpu_ms = _cpu_spent(app_before, app) * 1000 / result.requests
        result.pg_cpu_ms = _cpu_spent(pg_before, pg) * 1000 / result.requests
    return result


def _python_load(url: str, key: str, name: str, servers: int, duration: int, connections: int,
                 bodies: list[str] | None) -> WrkResult:
    rng = random.Random(5)

    def body() -> bytes:
        assert bodies is not None
        title = " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n)) for n in (7, 9, 6))
        return ('{"title": "' + title + '", ' + rng.choice(bodies) + "}").encode()

    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    done = asyncio.run(hammer(url, headers, connections=connections, duration=duration,
                              body=body if bodies is not None else None))
    return WrkResult(name, servers, done.requests, done.seconds, done.requests / done.seconds,
                     done.p50_ms, done.p99_ms, done.errors)


# --- orchestration --------------------------------------------------------------------------


async def bulk_load(fable: Fable, user_id: int, corpus: Corpus, count: int, batch: int = 2000) -> float:
    """Insert ``count`` corpus notes directly, with their words in the vocabulary (no versions or
    link rows): the REST bench measures the API, and neither listing nor creating reads those,
    while creating reads the vocabulary (a new note adds the words it does not have: measured
    against an empty one, every word is new and its plan is the one for an empty table).
    ``bench.core`` measures loading."""
    from datetime import date

    from sqlalchemy import insert

    from fable_core.db.models import Note, title_key
    from fable_core.knowledge import vocabulary

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
            ids = list((await session.execute(insert(Note).returning(Note.id), rows)).scalars())
            await vocabulary.add(session, ids)


async def prepare(settings: Settings, notes: int, workers: int, loader: str) -> tuple[str, str, float]:
    """Create a user with a write key and load ``notes`` notes; returns (db url, key, seconds)."""
    from sqlalchemy import text

    from fable_core.identity.accounts import create_api_key, create_user

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


@dataclass
class Run:
    results: list[WrkResult]
    load_seconds: float
    generator: str  # "wrk" or "python"
    notes: int
    connections: int
    loader: str  # how the notes were loaded: "bulk" or "dispatcher"
    memory: PeakMemory | None = None  # the app processes and PostgreSQL, while serving


def run(args: Options, settings: Settings, pg_dir: Path | None) -> Run:
    wrk = find_wrk(args.loadgen)
    url, key, load_seconds = asyncio.run(prepare(settings, args.notes, args.workers, args.load))
    outcome = Run([], load_seconds, "wrk" if wrk else "python", args.notes, args.connections, args.load)
    bodies = post_bodies()
    with tempfile.TemporaryDirectory(prefix="fable-wrk-") as tmp:
        script = Path(tmp) / "post.lua"
        for servers in args.servers:
            port = free_port()
            procs = start_servers("web", url, port, "/api/health", servers)
            pids = [p.pid for p in procs]
            memory = PeakMemory({"app": functools.partial(list, pids), "PostgreSQL": lambda: postgres_pids(pg_dir)})
            memory.start()
            try:
                base = f"http://127.0.0.1:{port}"
                common: dict[str, Any] = {"servers": pids, "duration": args.duration,
                                          "connections": args.connections, "pg_dir": pg_dir}
                run_wrk(wrk, f"{base}/api/notes?limit=50", key, name="warmup", servers=pids,
                        duration=3, connections=args.connections)
                outcome.results.append(run_wrk(wrk, f"{base}/api/notes?limit=50", key,
                                               name="GET /api/notes?limit=50", **common))
                outcome.results.append(run_wrk(wrk, f"{base}/api/notes", key, name="POST /api/notes",
                                               bodies=bodies, script=script, **common))
            finally:
                memory.stop()
                stop(procs)
            if outcome.memory is None or memory.peak_total > outcome.memory.peak_total:
                outcome.memory = memory
    return outcome


def figures(r: Run) -> list[Figure]:
    """The best list rate first (``bench.run --repeat`` picks its median run by it)."""
    best = max((x.rps for x in r.results if x.name.startswith("GET")), default=0.0)
    return [Figure("GET /api/notes?limit=50, best", best, "req/s", "rate"),
            *[Figure(f"{x.name}, {x.servers} server(s)", x.rps, "req/s", "rate") for x in r.results],
            *[Figure(f"{x.name}, {x.servers} server(s), p50", x.p50_ms, "ms", "time") for x in r.results],
            *([Figure(f"peak PSS of {name}", mb, "MB") for name, mb in r.memory.peak.items()] if r.memory else [])]


def render(r: Run, machine: Machine, memory: PeakMemory | None = None) -> str:
    """The section; ``memory`` is unused: the app processes' peak while serving is ``r.memory``."""
    notes, connections = r.notes, r.connections
    how = "bulk insert" if r.loader == "bulk" else "through the dispatcher"
    generator = ("wrk (2 threads" if r.generator == "wrk" else
                 "the Python load generator `bench.harness.loadgen` (wrk was not installed; it spends far more CPU "
                 "per request than wrk, on the same cores: lower figures; one process")
    intro = (
        f"{notes:,} notes loaded ({how}, {r.load_seconds:.0f} s); then {generator}, {connections} "
        "connections, 10 s timeout, same machine) against the real app (uvicorn + uvloop + httptools, "
        "API-key auth, embedded PostgreSQL on the same machine). POSTs send corpus notes "
        f"({describe_bodies()}). `servers` is the number of app "
        "processes sharing the port (stateless replicas); CPU columns are the time the app "
        "processes and PostgreSQL spent per request; `load avg` is the machine's 1-minute load "
        "after the run (above 2, other work shared the 2 cores)."
    )
    header = ("| request | servers | requests | req/s | p50 ms | p99 ms | errors | app CPU ms/req "
              "| PostgreSQL CPU ms/req | load avg |")
    lines = ["## REST API (`python -m bench.rest`)", "", intro, "", machine.describe(), "", header,
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| `{x.name}` | {x.servers} | {x.requests:,} | {machine.rate(x.rps)} | {machine.ms(x.p50_ms)} | "
              f"{machine.ms(x.p99_ms)} | {x.errors} | {x.app_cpu_ms:.2f} | {x.pg_cpu_ms:.2f} | "
              f"{x.load_average:.1f} |" for x in r.results]
    best = max((x.rps for x in r.results if x.name.startswith("GET")), default=0.0)
    met = machine.normalise(best, "rate") >= 1000 and all(x.errors == 0 for x in r.results)
    verdict = (f"Target: at least 1,000 req/s for the list on 2 cores with no errors, at the reference "
               f"speed: {'met' if met else 'NOT met'} (best {machine.rate(best)} req/s).")
    lines += ["", verdict]
    if r.memory is not None:
        lines += ["", r.memory.describe() + " app: the app processes of the run with the most; PostgreSQL: "
                  "the postmaster and its backends."]
    get = [x for x in r.results if x.name.startswith("GET") and x.app_cpu_ms]
    if get:
        cpu_ms = min(x.app_cpu_ms + x.pg_cpu_ms for x in get)
        ceiling = (f"CPU per list request ({cpu_ms:.1f} ms of app and PostgreSQL time, measured under "
                   f"the load shown) bounds what 2 idle cores could serve at about {2000 / cpu_ms:,.0f} req/s.")
        lines += ["", ceiling]
    return "\n".join(lines)


def _measure(o: Options) -> Measured[Run]:
    with tempfile.TemporaryDirectory(prefix="fable-bench-") as tmp, session(Path(tmp), o.database_url) as bench:
        settings = load_settings({}, database_url=bench.database_url, fable_data_dir=Path(tmp),
                                 llm_provider="none", fable_db_pool_size=max(10, o.workers + 2))
        outcome = run(o, settings, bench.pg_dir)
    return bench.measured(outcome)


BENCH = Bench("rest", __doc__, Options, _measure, render, figures, quick=Options(notes=2000, duration=3, servers=[1]))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
