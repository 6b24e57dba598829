"""Where an MCP call's time goes: each kind of call, from the client's send to its receive,
profiled and split by the code it runs in.

    python -m bench.mcp_profile [--notes 2000] [--calls 300] [--no-write]

One Fable on a fresh embedded PostgreSQL with ``--notes`` corpus notes, and the official SDK
client connected to ``fable_mcp.server.build_server`` in the same process (the SDK's in-memory
transport: no pipe, no HTTP, so what is left is the SDK on both ends, Fable's MCP layer, the
dispatcher, the tool and PostgreSQL). Each kind of call runs ``--calls`` times unprofiled (its
p50) and ``--calls`` times under cProfile (wall clock). Every function's own time is put in one
bucket by its module (and, for pydantic-core's compiled methods, by what they do), and each
bucket's share of the profiled time is applied to the unprofiled p50: the profiler slows Python
code and not the waits, so the split of CPU buckets is approximate and the wait is exact to
first order. The time the event loop sleeps in ``epoll`` is the wait for PostgreSQL (its
backend works meanwhile). The stdio and HTTP transports' own cost is ``bench.mcp``'s stdio and
HTTP figures less this p50.
"""

from __future__ import annotations

import asyncio
import cProfile
import pstats
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness.bench import Bench, Measured
from bench.harness.corpus import Corpus
from bench.harness.machine import Machine
from bench.harness.options import option
from bench.harness.report import Figure
from bench.harness.session import session
from bench.mcp import Creates, checked, queries
from bench.rest import bulk_load
from fable_core.config import load_settings
from fable_core.runtime import Fable

__all__ = ["BENCH", "Options"]

# (bucket, test on "file:function"), first match wins
BUCKETS: list[tuple[str, Callable[[str], bool]]] = [
    ("waiting for PostgreSQL (event loop idle)", lambda f: "method 'poll' of 'select.epoll'" in f),
    ("usage logging", lambda f: "fable_core/tools/usage" in f),
    ("dispatcher (access, availability, jobs, results)", lambda f: "fable_core/tools/" in f),
    ("Fable's MCP layer (fable_mcp)", lambda f: "fable_mcp/" in f),
    ("validation (pydantic)", lambda f: "pydantic" in f and "validat" in f),
    ("serialisation (pydantic, json)", lambda f: ("pydantic" in f and ("serializ" in f or "to_json" in f
                                                  or "to_python" in f or "dump" in f)) or "json/" in f
                                                 or "'_json." in f or "orjson" in f),
    ("pydantic, other", lambda f: "pydantic" in f),
    ("SQL: SQLAlchemy", lambda f: "sqlalchemy" in f),
    ("SQL: asyncpg", lambda f: "asyncpg" in f),
    ("MCP SDK (client and server, anyio streams)", lambda f: "/mcp/" in f or "mcp_types" in f or "anyio" in f),
    ("asyncio event loop", lambda f: "asyncio" in f or "uvloop" in f),
    ("the tools' own code (fable_core)", lambda f: "fable_core/" in f),
]
OTHER = "other (stdlib, builtins)"


@dataclass(frozen=True)
class Options:
    notes: int = 2_000
    calls: int = option(300, "calls per kind, unprofiled and profiled each")


@dataclass
class Kind:
    name: str
    p50_ms: float
    buckets: dict[str, float] = field(default_factory=dict)  # bucket -> ms per call (share x p50)


def bucket_of(where: str) -> str:
    return next((name for name, test in BUCKETS if test(where)), OTHER)


def split(profile: cProfile.Profile, p50_ms: float) -> dict[str, float]:
    stats = pstats.Stats(profile)
    own: dict[str, float] = {}
    for (file, _line, function), (_cc, _nc, tottime, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        name = bucket_of(f"{file}:{function}")
        own[name] = own.get(name, 0.0) + tottime
    total = sum(own.values()) or 1.0
    return {name: p50_ms * seconds / total for name, seconds in sorted(own.items(), key=lambda kv: -kv[1])}


async def profile_kind(name: str, calls: int, call: Callable[[int], Awaitable[object]]) -> Kind:
    for i in range(20):
        await call(i)
    times = []
    for i in range(calls):
        started = time.perf_counter()
        await call(i)
        times.append((time.perf_counter() - started) * 1000)
    p50 = statistics.median(times)
    profile = cProfile.Profile()
    profile.enable()
    for i in range(calls):
        await call(calls + i)
    profile.disable()
    return Kind(name, p50, split(profile, p50))


async def run(fable: Fable, o: Options) -> list[Kind]:
    from mcp import Client

    from fable_core.identity.accounts import create_user
    from fable_core.tools.caller import Caller
    from fable_mcp.server import build_server

    async with fable.db.transaction() as s:
        user = await create_user(s, "bench", None)
    await bulk_load(fable, user.id, Corpus(seed=11), o.notes)
    caller = Caller(user_id=user.id, username="bench", role=user.role)
    async with fable.db.transaction() as s:
        from sqlalchemy import text
        await s.execute(text("ANALYZE"))
        ids = list((await s.execute(text("SELECT id FROM notes"))).scalars())
    rng = random.Random(3)
    picks = [rng.choice(ids) for _ in range(2 * o.calls + 20)]
    asks = queries(2 * o.calls + 20)
    creates = Creates(seed=500)
    async with Client(build_server(fable, caller)) as client:
        kinds: list[tuple[str, Callable[[int], Awaitable[Any]]]] = [
            ("read_note", lambda i: checked(client, "read_note", {"note_id": picks[i]})),
            ("create_note", lambda i: creates(client)),
            ("search_notes", lambda i: checked(client, "search_notes", {"query": asks[i]})),
            ("list_notes (20)", lambda i: checked(client, "list_notes", {})),
        ]
        return [await profile_kind(name, o.calls, call) for name, call in kinds]


def _measure(o: Options) -> Measured[list[Kind]]:
    with tempfile.TemporaryDirectory(prefix="fable-bench-") as tmp, session(Path(tmp)) as bench:
        settings = load_settings({}, database_url=bench.database_url, fable_data_dir=Path(tmp), llm_provider="none")

        async def work() -> list[Kind]:
            fable = await Fable.open(settings)
            try:
                return await run(fable, o)
            finally:
                await fable.close()

        result = asyncio.run(work())
    return bench.measured(result)


def figures(kinds: list[Kind]) -> list[Figure]:
    return [Figure(f"{k.name} in-process p50", k.p50_ms, "ms", "time") for k in kinds]


def render(kinds: list[Kind], machine: Machine, _memory: object) -> str:
    names = list(dict.fromkeys(b for k in kinds for b in k.buckets))
    names.sort(key=lambda b: -sum(k.buckets.get(b, 0.0) for k in kinds))
    head = "| where | " + " | ".join(k.name for k in kinds) + " |"
    rows = [f"| {b} | " + " | ".join(f"{k.buckets.get(b, 0.0):.2f}" for k in kinds) + " |" for b in names]
    return "\n".join([
        "## Where an MCP call's time goes",
        "",
        ("`python -m bench.mcp_profile`: the SDK client and Fable's MCP server in one process (the SDK's "
         "in-memory transport), one user's corpus notes in a fresh embedded PostgreSQL; each kind of call's "
         "p50 without the profiler, split by the share of cProfile's wall time each part of the code took "
         "(ms per call). The profiler slows Python code, not the waits, so CPU rows are approximate."),
        "",
        machine.describe(),
        "",
        head,
        "|---|" + "---:|" * len(kinds),
        "| **p50, unprofiled** | " + " | ".join(f"**{machine.ms(k.p50_ms)}**" for k in kinds) + " |",
        *rows,
        "",
    ])


BENCH = Bench("mcp_profile", __doc__, Options, _measure, render, figures, quick=Options(notes=200, calls=30))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
