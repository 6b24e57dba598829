"""Shed load: what admitted requests wait when 4× as many clients as a process serves at once call it.

    python -m bench.shed [--notes 2000] [--seconds 10] [--no-write]

One fresh embedded PostgreSQL with ``--notes`` corpus notes; ``fable_web.app`` served by uvicorn
in its own process at its default limit (``FABLE_MAX_REQUESTS`` 0: from the cores and the pool;
the limit is read from ``/api/health``). Then three phases of ``--seconds`` each, every client a
loop of ``GET /api/notes?limit=20`` (its first page, the call a UI and an agent make most) and
``GET /api/search`` with a word of the corpus, taking turns, over one keep-alive
connection: 1 client, as many clients as the limit, and 4× the limit; then 4× the limit again
on a process that refuses nothing (``FABLE_MAX_REQUESTS=100000``), for comparison. A client refused (503) waits
its ``Retry-After``, as a well-behaved client does, and sends again. Reported per phase: calls
admitted and per second, refused, timed out (30 s), and the admitted calls' p50 and p99.

The target (issue 36): at 4× the limit the admitted calls' p99 stays within 2× of the p99 at the
limit (a full process, not an overloaded one), and nothing times out. The clients share the
2-core machine with the server. Results go to the "shed" section of docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.core import _make_user
from bench.harness.bench import Bench, Measured
from bench.harness.corpus import Corpus
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.report import Figure
from bench.harness.serving import free_port, start_servers, stop
from bench.harness.session import on_fable, session
from bench.rest import bulk_load
from fable_core.config import load_settings
from fable_core.identity.accounts import create_api_key
from fable_core.runtime import Fable

__all__ = ["BENCH", "Options"]

TIMEOUT = 30.0


@dataclass(frozen=True)
class Options:
    notes: int = option(2000, "notes loaded first")
    seconds: float = option(10.0, "seconds each phase runs")


@dataclass(frozen=True)
class Phase:
    clients: int
    shed: bool
    admitted: list[float]  # ms
    refused: int
    timed_out: int
    seconds: float

    def p(self, q: float) -> float:
        if len(self.admitted) < 2:
            return self.admitted[0] if self.admitted else 0.0
        return statistics.quantiles(self.admitted, n=100)[round(q * 100) - 1]


@dataclass(frozen=True)
class Result:
    limit: int
    notes: int
    phases: list[Phase]


async def _key(fable: Fable, notes: int, corpus: Corpus) -> str:
    user = await _make_user(fable)
    await bulk_load(fable, user.user_id, corpus, notes)
    async with fable.db.transaction() as s:
        _, key = await create_api_key(s, user.user_id, "bench")
    return key


async def _phase(url: str, key: str, clients: int, seconds: float, words: list[str], *, shed: bool = True) -> Phase:
    admitted: list[float] = []
    refused = timed_out = 0
    stop_at = time.monotonic() + seconds

    async def client(n: int) -> None:
        nonlocal refused, timed_out
        turn = n
        async with httpx.AsyncClient(base_url=url, timeout=TIMEOUT, headers={"authorization": f"Bearer {key}"}) as http:
            while time.monotonic() < stop_at:
                turn += 1
                path = "/api/notes?limit=20" if turn % 2 else f"/api/search?query={random.choice(words)}"
                begun = time.perf_counter()
                try:
                    response = await http.get(path)
                except httpx.TimeoutException:
                    timed_out += 1
                    continue
                if response.status_code == 503:
                    refused += 1
                    await asyncio.sleep(float(response.headers.get("retry-after", "1")))
                    continue
                response.raise_for_status()
                admitted.append((time.perf_counter() - begun) * 1000)

    begun = time.monotonic()
    await asyncio.gather(*(client(n) for n in range(clients)))
    return Phase(clients, shed, admitted, refused, timed_out, time.monotonic() - begun)


async def _limit(url: str) -> int:
    async with httpx.AsyncClient(base_url=url) as http:
        return int((await http.get("/api/health")).json()["load"]["limit"])


async def _run(url: str, key: str, options: Options, limit: int) -> list[Phase]:
    words = Corpus().words[:200]
    await _phase(url, key, limit, 2.0, words)  # warm: connections, caches, plans
    return [await _phase(url, key, clients, options.seconds, words) for clients in (1, limit, 4 * limit)]


async def _unshed(url: str, key: str, options: Options, clients: int) -> Phase:
    words = Corpus().words[:200]
    await _phase(url, key, clients // 4, 2.0, words, shed=False)
    return await _phase(url, key, clients, options.seconds, words, shed=False)


def measure(options: Options) -> Measured[Result]:
    with tempfile.TemporaryDirectory(prefix="fable-bench-") as tmp, session(Path(tmp)) as bench:
        settings = load_settings({}, database_url=bench.database_url, fable_data_dir=Path(tmp), llm_provider="none")
        key = asyncio.run(on_fable(settings, lambda fable: _key(fable, options.notes, Corpus())))
        url = f"http://127.0.0.1:{(port := free_port())}"
        procs = start_servers("web", bench.database_url, port, "/api/health")
        try:
            limit = asyncio.run(_limit(url))
            phases = asyncio.run(_run(url, key, options, limit))
        finally:
            stop(procs)
        os.environ["FABLE_MAX_REQUESTS"] = "100000"  # the same load, nothing refused: what it was before
        try:
            url = f"http://127.0.0.1:{(port := free_port())}"
            procs = start_servers("web", bench.database_url, port, "/api/health")
            try:
                phases.append(asyncio.run(_unshed(url, key, options, 4 * limit)))
            finally:
                stop(procs)
        finally:
            del os.environ["FABLE_MAX_REQUESTS"]
    return bench.measured(Result(limit, options.notes, phases))


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    at_limit = next(p for p in r.phases if p.clients == r.limit)
    rows = [f"| {p.clients}{'' if p.shed else ', nothing refused'} | {len(p.admitted):,} | "
            f"{len(p.admitted) / p.seconds:,.0f} | {p.refused:,} | "
            f"{p.timed_out} | {machine.ms(p.p(.5))} | {machine.ms(p.p(.99))} | "
            f"{p.p(.99) / at_limit.p(.99):.2f}× |" for p in r.phases]
    return "\n".join([
        "## Shed load (`python -m bench.shed`)",
        "",
        f"`fable_web.app` in its own uvicorn process at its default limit ({r.limit} requests in progress "
        f"on this machine: 4 per core, at most 2 per pooled connection), {r.notes:,} notes. Each client "
        "loops over `GET /api/notes?limit=20` and `GET /api/search` on one keep-alive connection; "
        "a refused client waits its `Retry-After` (1 s) and sends again. Clients and server share the "
        "machine. Target (issue 36): at 4× the limit, the admitted calls' p99 within 2× of the p99 at the "
        "limit, and no timeouts. The last row is the same 4× load on a process that refuses nothing "
        "(`FABLE_MAX_REQUESTS=100000`): what it was before. Cells are ms.",
        "",
        machine.describe(),
        "",
        "| Clients | Admitted | Per second | Refused | Timed out | p50 | p99 | p99 ÷ at the limit |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
        memory.describe(),
    ])


def figures(r: Result) -> list[Figure]:
    at_limit = next(p for p in r.phases if p.clients == r.limit)
    over = next(p for p in r.phases if p.clients == 4 * r.limit and p.shed)
    return [Figure("admitted p99 at 4x the limit", over.p(.99), "ms", "time"),
            Figure("admitted p99 at 4x over at the limit", over.p(.99) / at_limit.p(.99), "x", "other"),
            Figure("timeouts at 4x the limit", over.timed_out, "calls", "other")]


BENCH = Bench("shed", __doc__, Options, measure, render, figures, quick=Options(notes=50, seconds=1.0))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
