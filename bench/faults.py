"""Faults: writes through a PostgreSQL outage — how many were lost, doubled or corrupted, and how
long the service took to come back.

    python -m bench.faults [--writers 8] [--outage 20] [--no-write]

A cluster of the embedded wheel's PostgreSQL of its own (``tests.support.pgcluster``: ``fsync`` off,
a throwaway; a fast shutdown writes everything out anyway); ``fable_web.app`` served by uvicorn in
its own process. ``--writers`` clients create notes over REST, one after another, each note's title
and body its own, each sent with an ``Idempotency-Key`` (its title) and sent again with the same key
after any failure (a 503, a cut connection), as a careful client does. After 3 s PostgreSQL is
stopped (fast shutdown: every session ended) for ``--outage`` seconds, then started again on its
data; the writers go on 5 s more and finish the note in hand. Then the database is read: a note
acknowledged (200) but absent is **lost**, a title twice **duplicated**, a note whose body is not
its own or whose history is not one version **corrupted**. **Recovery** is the time from PostgreSQL
accepting connections again to the first acknowledged write. Results go to the "faults" section of
docs/benchmarks.md, with ``bench.shed``'s shed-load figures in theirs.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from bench.core import _make_user
from bench.harness.bench import Bench, Measured
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.report import Figure
from bench.harness.serving import free_port, start_servers, stop
from bench.harness.session import on_fable, session
from fable_core.config import load_settings
from fable_core.identity.accounts import create_api_key
from fable_core.runtime import Fable
from tests.support.pgcluster import ThrowawayServer, throwaway_server

__all__ = ["BENCH", "Options"]

BEFORE = 3.0  # seconds of writes before the outage
AFTER = 5.0  # seconds of writes after it
FINISH = 60.0  # seconds a writer has to finish the note in hand at the end


@dataclass(frozen=True)
class Options:
    writers: int = option(8, "concurrent writing clients")
    outage: float = option(20.0, "seconds PostgreSQL is stopped")


@dataclass
class Result:
    writers: int
    outage: float
    acked: dict[str, float] = field(default_factory=dict)  # title → when acknowledged (monotonic)
    tries: int = 0
    refused: Counter[str] = field(default_factory=Counter)  # why a try failed → how many
    down_at: float = 0.0
    up_at: float = 0.0
    stored: Counter[str] = field(default_factory=Counter)  # title → rows
    corrupted: int = 0

    @property
    def lost(self) -> int:
        return sum(1 for title in self.acked if self.stored[title] == 0)

    @property
    def duplicated(self) -> int:
        return sum(1 for count in self.stored.values() if count > 1)

    @property
    def recovery(self) -> float:
        after = [at for at in self.acked.values() if at >= self.up_at]
        return min(after) - self.up_at if after else float("inf")

    def acked_between(self, start: float, end: float) -> int:
        return sum(1 for at in self.acked.values() if start <= at < end)


async def _key(fable: Fable) -> str:
    user = await _make_user(fable)
    async with fable.db.transaction() as s:
        _, key = await create_api_key(s, user.user_id, "faults")
    return key


async def _writer(n: int, url: str, key: str, result: Result, stop_at: list[float]) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=30, headers={"authorization": f"Bearer {key}"}) as http:
        i = 0
        while time.monotonic() < stop_at[0]:
            title = f"w{n}-{i:05d}"
            give_up = stop_at[0] + FINISH
            while time.monotonic() < give_up:  # the same note, with the same key, until acknowledged
                result.tries += 1
                try:
                    answer = await http.post("/api/notes", json={"title": title, "body": f"the body of {title}"},
                                             headers={"idempotency-key": title})
                except httpx.TransportError as e:
                    result.refused[type(e).__name__] += 1
                    await asyncio.sleep(0.2)
                    continue
                if answer.status_code == 200:
                    result.acked[title] = time.monotonic()
                    break
                result.refused[f"{answer.status_code} {answer.json().get('error', {}).get('type', '?')}"] += 1
                await asyncio.sleep(float(answer.headers.get("retry-after", "0.2")))
            i += 1


async def _outage(server: ThrowawayServer, result: Result, seconds: float) -> None:
    await asyncio.sleep(BEFORE)
    result.down_at = time.monotonic()
    await asyncio.to_thread(server.stop)
    await asyncio.sleep(max(0.0, seconds - (time.monotonic() - result.down_at)))
    await asyncio.to_thread(server.start)
    result.up_at = time.monotonic()


async def _run(url: str, key: str, server: ThrowawayServer, options: Options) -> Result:
    result = Result(options.writers, options.outage)
    stop_at = [float("inf")]
    writers = [asyncio.create_task(_writer(n, url, key, result, stop_at)) for n in range(options.writers)]
    await _outage(server, result, options.outage)
    stop_at[0] = time.monotonic() + AFTER
    await asyncio.gather(*writers)
    return result


async def _read(database_url: str, result: Result) -> None:
    engine = create_async_engine(database_url, poolclass=NullPool)
    try:
        async with engine.connect() as conn:
            rows = (await conn.execute(text(
                "SELECT n.title, n.body, (SELECT count(*) FROM note_versions v WHERE v.note_id = n.id) AS versions "
                "FROM notes n WHERE n.title LIKE 'w%-%'"))).all()
    finally:
        await engine.dispose()
    for title, body, versions in rows:
        result.stored[title] += 1
        if body != f"the body of {title}" or versions != 1:
            result.corrupted += 1


def measure(options: Options) -> Measured[Result]:
    # the embedded wheel's PostgreSQL in a cluster of the bench's own, which it can stop and start
    with throwaway_server() as server, tempfile.TemporaryDirectory(prefix="fable-bench-") as tmp, \
            session(Path(tmp), server.url) as bench:
        settings = load_settings({}, database_url=server.url, fable_data_dir=Path(tmp), llm_provider="none")
        key = asyncio.run(on_fable(settings, _key))
        port = free_port()
        procs = start_servers("web", server.url, port, "/api/health")
        try:
            result = asyncio.run(_run(f"http://127.0.0.1:{port}", key, server, options))
        finally:
            stop(procs)
        asyncio.run(_read(server.url, result))
    return bench.measured(result)


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    refused = ", ".join(f"{why}: {count:,}" for why, count in r.refused.most_common()) or "none"
    return "\n".join([
        "## Faults: writes through a PostgreSQL outage (`python -m bench.faults`)",
        "",
        f"{r.writers} clients create notes over REST, each with an `Idempotency-Key`, sending a note again "
        f"(same key) after any failure; PostgreSQL is stopped (fast shutdown) {BEFORE:g} s in, for "
        f"{r.outage:g} s, then started again on its data; the writers go on {AFTER:g} s and finish the note "
        "in hand. Then the database is read and compared with what the clients were told.",
        "",
        machine.describe(),
        "",
        "| Figure | Value |",
        "|---|---:|",
        f"| notes acknowledged | {len(r.acked):,} |",
        f"| acknowledged before / during / after the outage | {r.acked_between(0, r.down_at):,} / "
        f"{r.acked_between(r.down_at, r.up_at):,} / {r.acked_between(r.up_at, float('inf')):,} |",
        f"| **lost** (acknowledged, absent) | **{r.lost}** |",
        f"| **duplicated** (a title twice) | **{r.duplicated}** |",
        f"| **corrupted** (another body, or not one version) | **{r.corrupted}** |",
        f"| recovery: PostgreSQL up → first acknowledged write | {r.recovery:.2f} s |",
        f"| tries / failed tries | {r.tries:,} / {sum(r.refused.values()):,} |",
        f"| why tries failed | {refused} |",
        "",
        memory.describe(),
    ])


def figures(r: Result) -> list[Figure]:
    return [Figure("writes lost", r.lost, "writes", "other"),
            Figure("writes duplicated", r.duplicated, "writes", "other"),
            Figure("writes corrupted", r.corrupted, "writes", "other"),
            Figure("recovery after the outage", r.recovery, "s", "other")]


BENCH = Bench("faults", __doc__, Options, measure, render, figures, quick=Options(writers=2, outage=2.0))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
