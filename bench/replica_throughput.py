"""Replica throughput: MCP ``read_note`` and the web UI's notes list with 1, 2 and 4 ``fable serve``
replicas on one PostgreSQL, and the sizing figures of one replica.

    python -m bench.replica_throughput [--notes 20000] [--replicas 1 2 4] [--duration 10]
                                       [--connections 32] [--no-write]

Starts a fresh embedded PostgreSQL in a temporary directory (or uses ``--database-url``), bulk
loads synthetic notes (``bench.rest.bulk_load``), then for each replica count N starts N real
``fable serve`` processes (each on its own port, all on that database and one data directory,
jobs and request logging on, as deployed) and drives them with wrk: one wrk process per replica,
started together, their figures summed (client-side round robin: a balancer written in Python
would be the bottleneck on 2 cores, and one wrk cannot spread over several hosts). The total
number of connections stays the same for every N, split evenly. Two workloads, one after the
other:

- ``GET /api/notes?kind=note&limit=30&sort=updated&preview=true``: the first page of the web
  UI's notes list;
- MCP ``tools/call read_note`` of a random note, as stateless 2026-07-28 requests (one JSON-RPC
  POST each, ``_meta`` carrying the protocol version, no session); a result with
  ``"isError":true`` counts as an error.

Each row: requests per second, p50 and p95 latency (pooled from each wrk's percentiles, weighted
by its requests), per-core efficiency (req/s / min(N, cores), relative to one replica), the CPU
time per request of the replicas, PostgreSQL and wrk, and how much of the machine other
processes took meanwhile. Sizing: each replica's RSS idle after start and after the load, and the
database connections the replicas held (idle, peak under load). Results go to the
"replica_throughput" section of docs/benchmarks.md.

wrk is required (``sudo apt-get install wrk``); without it the bench says so and exits with
status 3 (skipped).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from bench.harness.bench import Bench, Measured, Unavailable
from bench.harness.corpus import Corpus
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.postgres import postmaster
from bench.harness.report import Figure
from bench.harness.serving import free_port
from bench.harness.session import session
from bench.harness.starts import FABLE, fable_env
from bench.rest import bulk_load
from fable_core.config import load_settings
from fable_core.db.database import async_url
from fable_core.runtime import Fable

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    notes: int = 20_000
    replicas: list[int] = option([1, 2, 4], "replica counts to try")
    duration: float = option(10.0, "seconds per measured run")
    warmup: float = option(2.0, "seconds of warm-up per workload and replica count")
    settle: float = option(2.0, "seconds after the replicas start before measuring RSS")
    connections: int = option(32, "connections in all, split among the replicas")
    database_url: str | None = option(None, "use this database instead of a fresh embedded one")


WRK_HINT = "install it with `sudo apt-get install wrk` (Debian, Ubuntu) or from https://github.com/wg/wrk"
LIST_PATH = "/api/notes?kind=note&limit=30&sort=updated&preview=true"  # as fable_web/static/js/views/notes.js asks
PROTOCOL = "2026-07-28"
WORKLOADS = ("REST notes list", "MCP read_note")


# --- wrk scripts --------------------------------------------------------------------------------

_DONE_LUA = """
local threads = {}
function setup(thread)
  thread:set("seed", #threads + 1)
  table.insert(threads, thread)
end
function init(args)
  failed = 0
  math.randomseed(os.time() * 97 + seed)
end
function done(summary, latency, requests)
  local failures = 0
  for _, t in ipairs(threads) do failures = failures + t:get("failed") end
  local e = summary.errors
  local q = {}
  for p = 1, 99 do q[#q + 1] = string.format("%.0f", latency:percentile(p)) end
  io.write(string.format('RESULT {"requests": %d, "us": %d, "failed": %d, "status": %d, "socket": %d, "pcts": [%s]}\\n',
    summary.requests, summary.duration, failures, e.status, e.connect + e.read + e.write + e.timeout,
    table.concat(q, ",")))
end
"""

_READ_LUA = """
request = function()
  local body = string.format(BODY, ids[math.random(1, #ids)])
  return wrk.format("POST", "/mcp", nil, body)
end
response = function(status, headers, body)
  if status ~= 200 or string.find(body, '"isError":true', 1, true) then failed = failed + 1 end
end
"""


def list_lua() -> str:
    """wrk's script for the notes list: GETs of one URL; only the summary (errors, percentiles)."""
    return _DONE_LUA


def read_lua(ids: list[int]) -> str:
    """wrk's script for MCP read_note: a stateless tools/call of a random note of ``ids`` per request."""
    meta = {"io.modelcontextprotocol/protocolVersion": PROTOCOL,
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "read_note", "arguments": {"note_id": 0}, "_meta": meta}},
                      separators=(",", ":")).replace('"note_id":0', '"note_id":%d')
    table = ",".join(str(i) for i in ids)
    return f"ids = {{{table}}}\nBODY = [==[{body}]==]\n{_READ_LUA}{_DONE_LUA}"


# --- results ------------------------------------------------------------------------------------


@dataclass
class Part:
    """One wrk process's result (one replica's share of a run)."""

    requests: int
    seconds: float
    errors: int
    percentiles_ms: list[float]  # p1 .. p99


def parse_part(out: str) -> Part:
    line = next((x for x in out.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"unexpected wrk output:\n{out}")
    found = json.loads(line[len("RESULT "):])
    return Part(found["requests"], found["us"] / 1e6, found["failed"] + found["status"] + found["socket"],
                [us / 1000 for us in found["pcts"]])


def pooled_quantile(parts: list[Part], q: float) -> float:
    """The ``q`` quantile of the parts' latencies together: each part's 99 percentiles stand for
    its requests in equal shares."""
    points = sorted((ms, part.requests / len(part.percentiles_ms)) for part in parts for ms in part.percentiles_ms)
    total = sum(weight for _, weight in points)
    if not total:
        return 0.0
    seen = 0.0
    for ms, weight in points:
        seen += weight
        if seen >= q * total:
            return ms
    return points[-1][0]


@dataclass
class Row:
    workload: str
    replicas: int
    connections: int  # per replica
    parts: list[Part]
    app_cpu_s: float = 0.0
    pg_cpu_s: float = 0.0
    wrk_cpu_s: float = 0.0
    busy_cpu_s: float = 0.0  # the whole machine's busy CPU time over the run
    sessions: int = 0  # database sessions opened during the run (pool overflow churn)
    load_average: float = 0.0

    @property
    def requests(self) -> int:
        return sum(p.requests for p in self.parts)

    @property
    def seconds(self) -> float:
        return max(p.seconds for p in self.parts)

    @property
    def rps(self) -> float:
        return sum(p.requests / p.seconds for p in self.parts if p.seconds)

    @property
    def errors(self) -> int:
        return sum(p.errors for p in self.parts)

    def per_request_ms(self, cpu_s: float) -> float:
        return cpu_s * 1000 / self.requests if self.requests else 0.0

    @property
    def others_cores(self) -> float:
        """Cores other processes (not this bench's) kept busy on average during the run."""
        ours = self.app_cpu_s + self.pg_cpu_s + self.wrk_cpu_s
        return max(0.0, self.busy_cpu_s - ours) / self.seconds if self.seconds else 0.0


@dataclass
class Sizing:
    """Per replica count: the replicas' RSS (MB) and the database connections they held."""

    rss_idle_mb: list[float] = field(default_factory=list)
    rss_after_mb: list[float] = field(default_factory=list)
    connections_idle: int = 0
    listening: int = 0  # of connections_idle: LISTEN connections, outside the pools
    connections_peak: int = 0


@dataclass
class Results:
    notes: int
    load_seconds: float
    connections: int
    pool_size: int
    rows: list[Row] = field(default_factory=list)
    sizing: dict[int, Sizing] = field(default_factory=dict)

    def row(self, workload: str, replicas: int) -> Row | None:
        return next((r for r in self.rows if r.workload == workload and r.replicas == replicas), None)

    def efficiency(self, row: Row, cores: int) -> float | None:
        """req/s per core in use (replicas, at most ``cores``) relative to one replica's; None
        without a one-replica run."""
        one = self.row(row.workload, 1)
        if one is None or not one.rps:
            return None
        return (row.rps / min(row.replicas, cores)) / one.rps


# --- setup --------------------------------------------------------------------------------------


async def prepare(database_url: str, data_dir: Path, notes: int) -> tuple[str, list[int], float, int]:
    """The user 'bench' with a write key and ``notes`` notes: (key, note ids, seconds, pool size)."""
    from fable_core.identity.accounts import create_api_key, create_user

    settings = load_settings({}, database_url=database_url, fable_data_dir=data_dir, llm_provider="none")
    fable = await Fable.open(settings)
    try:
        async with fable.db.transaction() as session_:
            user = await create_user(session_, "bench", None)
            _, key = await create_api_key(session_, user.id, "bench", "write")
        seconds = await bulk_load(fable, user.id, Corpus(seed=19), notes)
        async with fable.db.engine.begin() as conn:
            await conn.execute(text("ANALYZE"))
            ids = list((await conn.execute(text("SELECT id FROM notes"))).scalars())
        return key, ids, seconds, settings.fable_db_pool_size
    finally:
        await fable.close()


@dataclass
class Replica:
    url: str
    process: subprocess.Popen[bytes]
    log: Path


def start_replicas(count: int, data_dir: Path, database_url: str) -> list[Replica]:
    """``count`` ``fable serve`` processes, started together, each answering /api/health."""
    env = {**fable_env(data_dir, database_url), "FABLE_SECRET_KEY": "bench-replica-secret"}
    replicas = []
    for i in range(count):
        port, log = free_port(), data_dir / f"serve-{count}-{i}.log"
        with log.open("wb") as out:
            process = subprocess.Popen([str(FABLE), "serve", "--port", str(port)], env=env,
                                       stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        replicas.append(Replica(f"http://127.0.0.1:{port}", process, log))
    deadline = time.monotonic() + 120
    with httpx.Client(timeout=5) as http:
        for replica in replicas:
            while True:
                try:
                    if http.get(f"{replica.url}/api/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if replica.process.poll() is not None or time.monotonic() > deadline:
                    stop_replicas(replicas)
                    raise SystemExit(f"fable serve did not start:\n{replica.log.read_text()[-2000:]}")
                time.sleep(0.1)
    return replicas


def stop_replicas(replicas: list[Replica]) -> None:
    for r in replicas:
        if r.process.poll() is None:
            r.process.terminate()
    for r in replicas:
        try:
            r.process.wait(30)
        except subprocess.TimeoutExpired:
            r.process.kill()
            r.process.wait()


def rss_mb(replicas: list[Replica]) -> list[float]:
    found = []
    for r in replicas:
        try:
            found.append(psutil.Process(r.process.pid).memory_info().rss / 2**20)
        except psutil.Error:
            continue
    return found


def _cpu(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def _pg_cpu(pg_dir: Path | None) -> float:
    """PostgreSQL's CPU seconds so far: the postmaster's, its live backends' and those of the
    backends it has reaped (a pool's overflow connections end under load)."""
    process = postmaster(pg_dir) if pg_dir is not None else None
    if process is None:
        return 0.0
    try:
        times = process.cpu_times()
        children = process.children(recursive=True)
    except psutil.Error:
        return 0.0
    return times.user + times.system + times.children_user + times.children_system + _cpu([c.pid for c in children])


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _busy() -> float:
    """CPU seconds the whole machine has spent running anything (not idle, waiting or stolen)."""
    times = psutil.cpu_times()
    return float(sum(getattr(times, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq")))


# --- the runs -----------------------------------------------------------------------------------


class Connections:
    """The replicas' client connections to the bench's database (not its own), counted every
    half second while started, and the sessions PostgreSQL has opened so far. One connection of
    its own, held throughout, so that it opens none itself."""

    def __init__(self, database_url: str) -> None:
        self.engine = create_async_engine(async_url(database_url), pool_size=1, max_overflow=0)
        self.peak = 0
        self._task: asyncio.Task[None] | None = None

    async def _scalar(self, sql: str) -> int:
        async with self.engine.connect() as conn:
            await conn.execute(text("SELECT pg_stat_clear_snapshot()"))
            return int(await conn.scalar(text(sql)) or 0)

    async def count(self, where: str = "true") -> int:
        return await self._scalar("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                                  f"AND datname = current_database() AND pid <> pg_backend_pid() AND {where}")

    async def listening(self) -> int:
        """Connections held open outside the pools to LISTEN (jobs, journal schedules, changes)."""
        return await self.count("query ILIKE 'LISTEN%'")

    async def sessions(self) -> int:
        return await self._scalar("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")

    async def _watch(self) -> None:
        while True:
            self.peak = max(self.peak, await self.count())
            await asyncio.sleep(0.5)

    def start(self) -> None:
        self.peak = 0
        self._task = asyncio.create_task(self._watch())

    async def stop(self) -> int:
        if self._task is not None:
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        return self.peak


@dataclass
class Rig:
    """What every run drives and watches."""

    wrk: str
    key: str
    pg_dir: Path | None
    watcher: Connections
    scripts: dict[str, Path]


async def drive(rig: Rig, replicas: list[Replica], workload: str, *, connections: int, duration: float) -> Row:
    """One wrk process per replica, started together, for ``duration`` seconds."""
    key, pg_dir = rig.key, rig.pg_dir
    headers = {"Authorization": f"Bearer {key}"}
    path = LIST_PATH
    if workload == WORKLOADS[1]:
        path = "/mcp"
        headers |= {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                    "MCP-Protocol-Version": PROTOCOL, "Mcp-Method": "tools/call", "Mcp-Name": "read_note"}
    flags = [arg for name, value in headers.items() for arg in ("-H", f"{name}: {value}")]
    app_pids = [r.process.pid for r in replicas]
    sessions0 = await rig.watcher.sessions()
    app0, pg0, wrk0, busy0 = _cpu(app_pids), _pg_cpu(pg_dir), _children_cpu(), _busy()
    procs = [await asyncio.create_subprocess_exec(
        rig.wrk, "-t1", f"-c{connections}", f"-d{duration:g}s", "--timeout", "10s", "-s", str(rig.scripts[workload]),
        *flags,
        f"{r.url}{path}", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT) for r in replicas]
    outs = [(await p.communicate())[0].decode() for p in procs]
    row = Row(workload, len(replicas), connections, [parse_part(out) for out in outs])
    row.app_cpu_s = _cpu(app_pids) - app0
    row.pg_cpu_s = _pg_cpu(pg_dir) - pg0
    row.wrk_cpu_s = _children_cpu() - wrk0
    row.busy_cpu_s = _busy() - busy0
    row.load_average = os.getloadavg()[0]
    row.sessions = await rig.watcher.sessions() - sessions0
    return row


async def run(args: Options, wrk: str, database_url: str, data_dir: Path,
              pg_dir: Path | None) -> Results:
    key, ids, seconds, pool_size = await prepare(database_url, data_dir, args.notes)
    results = Results(len(ids), seconds, args.connections, pool_size)
    scripts = dict(zip(WORKLOADS, (data_dir / "list.lua", data_dir / "read.lua"), strict=True))
    scripts[WORKLOADS[0]].write_text(list_lua())
    scripts[WORKLOADS[1]].write_text(read_lua(random.Random(7).sample(ids, min(len(ids), 5000))))
    watcher = Connections(database_url)
    rig = Rig(wrk, key, pg_dir, watcher, scripts)
    try:
        for count in args.replicas:
            replicas = await asyncio.to_thread(start_replicas, count, data_dir, database_url)
            try:
                sizing = results.sizing[count] = Sizing()
                await asyncio.sleep(args.settle)  # the start's jobs and first ticks
                sizing.rss_idle_mb = rss_mb(replicas)
                sizing.connections_idle = await watcher.count()
                sizing.listening = await watcher.listening()
                each = max(1, args.connections // count)
                watcher.start()
                for workload in WORKLOADS:  # warm-up: pools, caches, key checks
                    await drive(rig, replicas, workload, connections=each, duration=args.warmup)
                for workload in WORKLOADS:
                    row = await drive(rig, replicas, workload, connections=each, duration=args.duration)
                    results.rows.append(row)
                    print(f"  {count} replica(s), {workload}: {row.rps:,.0f} req/s, {row.errors} errors",
                          file=sys.stderr, flush=True)
                sizing.connections_peak = await watcher.stop()
                sizing.rss_after_mb = rss_mb(replicas)
            finally:
                await asyncio.to_thread(stop_replicas, replicas)
    finally:
        await watcher.stop()
        await watcher.engine.dispose()
    return results


# --- report -------------------------------------------------------------------------------------


def figures(r: Results, cores: int) -> list[Figure]:
    """The best notes-list rate first (``bench.run --repeat`` picks its median run by it)."""
    best = max((x.rps for x in r.rows if x.workload == WORKLOADS[0]), default=0.0)
    found = [Figure(f"{WORKLOADS[0]}, best", best, "req/s", "rate")]
    for x in r.rows:
        found += [Figure(f"{x.workload}, {x.replicas} replica(s)", x.rps, "req/s", "rate"),
                  Figure(f"{x.workload}, {x.replicas} replica(s), p50", pooled_quantile(x.parts, .5), "ms", "time")]
        efficiency = r.efficiency(x, cores)
        if efficiency is not None:
            found.append(Figure(f"{x.workload}, {x.replicas} replica(s), efficiency", efficiency, "ratio"))
    for count, s in r.sizing.items():
        found += [Figure(f"RSS per replica idle, {count} replica(s)", statistics.mean(s.rss_idle_mb), "MB"),
                  Figure(f"RSS per replica after load, {count} replica(s)", max(s.rss_after_mb, default=0), "MB"),
                  Figure(f"DB connections at peak, {count} replica(s)", s.connections_peak, "connections")]
    return found


def render(r: Results, machine: Machine, memory: PeakMemory | None = None) -> str:
    cores = machine.cores
    lines = [
        "## Replica throughput (`python -m bench.replica_throughput`)",
        "",
        (f"{r.notes:,} notes bulk-loaded into a fresh embedded PostgreSQL ({r.load_seconds:.0f} s); then 1, 2 "
         f"and 4 real `fable serve` processes on that one database (jobs and request logging on, as "
         f"deployed), each on its own port, driven by wrk: one wrk process (1 thread) per replica, started "
         f"together and summed (client-side round robin), {r.connections} connections in all split evenly, "
         f"10 s timeout. `REST notes list` is `GET {LIST_PATH}` (the web UI's first page of notes); "
         f"`MCP read_note` is a stateless {PROTOCOL} `tools/call` of a random note (one JSON-RPC POST, "
         "no session; a result with `isError` counts as an error). p50/p95 are pooled from each wrk's "
         "percentiles, weighted by its requests. Efficiency is req/s / min(replicas, cores), relative "
         "to one replica. CPU columns are CPU time per request of the replicas, PostgreSQL and wrk; "
         "`others` is how many cores other processes on the machine kept busy meanwhile (a shared "
         "machine: above 0.2 the figures are low)."),
        "",
        machine.describe(),
        "",
        ("| workload | replicas | conns/replica | requests | req/s | p50 ms | p95 ms | errors | efficiency "
         "| app CPU ms/req | PostgreSQL CPU ms/req | wrk CPU ms/req | DB sessions opened | others, cores | load avg |"),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [_row(x, r, machine) for x in sorted(r.rows, key=lambda x: (WORKLOADS.index(x.workload), x.replicas))]
    lines += ["", (f"This machine has {cores} cores, shared by the replicas, PostgreSQL and the load generator: "
                   "they cap the absolute figures, whatever the number of replicas. More replicas than cores "
                   "add processes competing for the same cores, not capacity; what scales is the CPU per "
                   "request, below."), ""]
    lines += _sizing(r, cores)
    return "\n".join(lines)


def _row(x: Row, r: Results, machine: Machine) -> str:
    found = r.efficiency(x, machine.cores)
    efficiency = "-" if found is None else f"{found:.2f}"
    return (f"| {x.workload} | {x.replicas} | {x.connections} | {x.requests:,} | {machine.rate(x.rps)} | "
            f"{machine.ms(pooled_quantile(x.parts, .5))} | {machine.ms(pooled_quantile(x.parts, .95))} | "
            f"{x.errors} | {efficiency} | {x.per_request_ms(x.app_cpu_s):.2f} | "
            f"{x.per_request_ms(x.pg_cpu_s):.2f} | {x.per_request_ms(x.wrk_cpu_s):.2f} | {x.sessions:,} | "
            f"{x.others_cores:.2f} | {x.load_average:.1f} |")


def _sizing(r: Results, cores: int) -> list[str]:
    lines = ["### Sizing", "",
             "| replicas | RSS per replica idle after start, MB | RSS per replica after the load, MB "
             "| DB connections idle (all replicas) | of which LISTEN | DB connections at peak (all replicas) |",
             "|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {count} | {_spread(s.rss_idle_mb)} | {_spread(s.rss_after_mb)} | {s.connections_idle} "
              f"| {s.listening} | {s.connections_peak} |" for count, s in r.sizing.items()]
    single = r.sizing.get(1)
    listen = f"{single.listening}" if single is not None else "a few"
    lines += ["", (f"Each replica's pool holds up to `FABLE_DB_POOL_SIZE` ({r.pool_size}) connections plus as many "
                   f"overflow ones, {2 * r.pool_size} at most, and {listen} more of its own held open to LISTEN "
                   "(outside the pool); the peak column is sampled every half second, so it can miss short-lived "
                   "overflow connections (`DB sessions opened` above counts them). Size PostgreSQL's "
                   f"`max_connections` for replicas x ({2 * r.pool_size} + {listen}), plus `fable` commands, "
                   "migrations and backups."), ""]
    for workload in WORKLOADS:
        one = r.row(workload, 1)
        if one is None or not one.requests:
            continue
        app_ms, pg_ms = one.per_request_ms(one.app_cpu_s), one.per_request_ms(one.pg_cpu_s)
        total_ms = app_ms + pg_ms + one.per_request_ms(one.wrk_cpu_s)
        lines.append(
            f"- {workload}: one replica served {one.rps:,.0f} req/s here, spending {app_ms:.2f} ms of CPU per "
            f"request (PostgreSQL {pg_ms:.2f} ms): one core of replica serves about "
            f"{1000 / app_ms if app_ms else 0:,.0f} req/s of it and one core of PostgreSQL about "
            f"{1000 / pg_ms if pg_ms else 0:,.0f} req/s, at this machine's speed. With replicas, PostgreSQL and "
            f"wrk ({total_ms:.2f} ms in all per request) alone on its {cores} cores, the machine would top out near "
            f"{cores * 1000 / total_ms if total_ms else 0:,.0f} req/s.")
    return lines


def _spread(values: list[float]) -> str:
    if not values:
        return "-"
    low, high = min(values), max(values)
    return f"{low:.0f}" if round(low) == round(high) else f"{low:.0f}-{high:.0f}"


def _measure(o: Options) -> Measured[Results]:
    wrk = shutil.which("wrk")
    if wrk is None:
        raise Unavailable(f"wrk is not installed; {WRK_HINT}")
    with tempfile.TemporaryDirectory(prefix="fable-bench-replicas-") as tmp, \
            session(Path(tmp), o.database_url) as bench:
        results = asyncio.run(run(o, wrk, bench.database_url, Path(tmp), bench.pg_dir))
    return bench.measured(results)


BENCH = Bench("replica_throughput", __doc__, Options, _measure, render, lambda r: figures(r, os.cpu_count() or 1),
              quick=Options(notes=2000, duration=2, replicas=[1, 2]))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
