"""Replicas benchmark: what running jobs once per due time and draining on SIGTERM cost.

    python -m bench.replicas [--runs 500] [--no-write]

One fresh embedded PostgreSQL, one Fable (no model). Timed, the kinds taking turns:

- a scheduled run of a no-op job (``run_job`` with its due time: the advisory lock, the look at
  ``job_runs``, the job, the record of the due time), against a wake's run (the lock alone);
- the same due time asked again (what each other replica's tick costs: the lock and the look);
- ``GET /api/health`` in process (httpx's ASGI transport) through the app alone and through
  :class:`fable_web.drain.Drain` (what every request pays for being drainable);
- an MCP ``ping`` in a 2025 session over real HTTP (two replicas, each its own Fable and uvicorn
  with ``FABLE_REPLICA_URL``, in this process): sent to the replica holding the session, and to
  the other one, which looks the session up in ``mcp_sessions`` and forwards it (the added hop).

Results go to the "replicas" section of docs/benchmarks.md.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx

from bench.core import _make_user
from bench.harness.bench import Bench
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.report import Figure
from bench.harness.session import on_one_fable
from fable_core.identity.accounts import create_api_key
from fable_core.runtime import Fable
from fable_core.tools.jobs import Job, job, run_job
from fable_core.tools.runtime import Runtime
from fable_web.app import create_app
from fable_web.drain import Drain
from tests.support.servers import free_port, serve

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    runs: int = option(500, "calls of each kind")


Calls = dict[str, list[float]]


async def run(fable: Fable, runs: int) -> Calls:
    table: dict[str, Job] = {}

    @job(every=60, jobs=table)
    async def noop(_: Runtime) -> None:
        return None

    due = [table["noop"].due(datetime.now(UTC))]

    async def scheduled() -> None:
        due[0] += timedelta(seconds=60)  # a new due time each run
        assert await run_job(fable, "noop", table, due=due[0])

    async def again() -> None:
        assert not await run_job(fable, "noop", table, due=due[0])

    async def woken() -> None:
        assert await run_job(fable, "noop", table)

    plain = httpx.AsyncClient(transport=httpx.ASGITransport(create_app(fable)), base_url="http://localhost")
    drained = httpx.AsyncClient(transport=httpx.ASGITransport(Drain(create_app(fable))), base_url="http://localhost")

    def health(client: httpx.AsyncClient) -> Callable[[], Awaitable[None]]:
        async def one() -> None:
            assert (await client.get("/api/health")).status_code == 200

        return one

    calls: dict[str, Callable[[], Awaitable[None]]] = {
        "scheduled run (new due time)": scheduled, "same due time again (skipped)": again,
        "woken run (lock only)": woken, "GET /api/health, app alone": health(plain),
        "GET /api/health, through Drain": health(drained)}
    async with plain, drained:
        for call in calls.values():
            for _ in range(5):
                await call()
        samples: Calls = {name: [] for name in calls}
        for _ in range(runs):
            for name, call in calls.items():
                begun = time.perf_counter()
                await call()
                samples[name].append((time.perf_counter() - begun) * 1000)
    return samples | await forwarding(fable, runs)


_ACCEPT = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}


async def forwarding(fable: Fable, runs: int) -> Calls:
    """An MCP ping on the replica holding the session and on the one forwarding it there."""
    async with fable.db.transaction() as s:
        _, key = await create_api_key(s, (await _make_user(fable)).user_id, "bench")
    ports = [free_port(), free_port()]
    async with AsyncExitStack() as stack:
        urls = []
        for port in ports:
            replica = await Fable.open(fable.settings.model_copy(
                update={"fable_replica_url": f"http://127.0.0.1:{port}"}))
            stack.push_async_callback(replica.close)
            urls.append(await stack.enter_async_context(serve(create_app(replica), port=port)))
        http = await stack.enter_async_context(httpx.AsyncClient(timeout=10, headers={
            "authorization": f"Bearer {key}", **_ACCEPT}))
        opened = await http.post(f"{urls[0]}/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
        http.headers["mcp-session-id"] = opened.headers["mcp-session-id"]
        await http.post(f"{urls[0]}/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"})

        def ping(url: str) -> Callable[[], Awaitable[None]]:
            async def one() -> None:
                r = await http.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
                assert r.status_code == 200 and '"result":{}' in r.text, r.text

            return one

        calls = {"MCP ping, on the session's replica": ping(urls[0]),
                 "MCP ping, forwarded by the other replica": ping(urls[1])}
        samples: Calls = {name: [] for name in calls}
        for _ in range(5):
            for call in calls.values():
                await call()
        for _ in range(runs):
            for name, call in calls.items():
                begun = time.perf_counter()
                await call()
                samples[name].append((time.perf_counter() - begun) * 1000)
    return samples


def _p(samples: list[float], q: float) -> float:
    return statistics.quantiles(samples, n=100)[int(q * 100) - 1] if len(samples) > 1 else samples[0]


def render(r: Calls, machine: Machine, memory: PeakMemory) -> str:
    rows = [f"| {name} | {len(s)} | {machine.ms(_p(s, .5))} | {machine.ms(_p(s, .95))} |" for name, s in r.items()]
    return "\n".join([
        "## Replicas: jobs once per due time, drainable requests (`python -m bench.replicas`)",
        "",
        "A no-op job run as a scheduled tick does it (advisory lock, `job_runs` look, run, due time recorded), "
        "the same due time asked again (each other replica's tick), and a wake (lock only); `GET /api/health` "
        "in process with and without the `Drain` layer `fable serve` wraps the app in; an MCP `ping` in a 2025 "
        "session over real HTTP, on the replica holding the session and on another replica, which finds the "
        "owner in `mcp_sessions` and forwards the request (two replicas in one process, `FABLE_REPLICA_URL` set). "
        "One at a time, the kinds taking turns. Cells are ms.",
        "",
        machine.describe(),
        "",
        "| Call | Samples | p50 | p95 |",
        "|---|---:|---:|---:|",
        *rows,
        "",
        memory.describe(),
    ])


def figures(r: Calls) -> list[Figure]:
    return [Figure("scheduled job run p50", _p(r["scheduled run (new due time)"], .5), "ms", "time"),
            Figure("health through Drain p50", _p(r["GET /api/health, through Drain"], .5), "ms", "time"),
            Figure("forwarded MCP call added p50", _p(r["MCP ping, forwarded by the other replica"], .5)
                   - _p(r["MCP ping, on the session's replica"], .5), "ms", "time")]


BENCH = Bench("replicas", __doc__, Options, lambda o: on_one_fable(lambda fable: run(fable, o.runs)), render, figures,
              quick=Options(runs=20))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
