"""Images benchmark: a cached image served from ``GET /api/images/{id}`` over real HTTP.

    python -m bench.images [--runs 2000] [--no-write]

One fresh embedded PostgreSQL in a temporary directory, which is also the data dir. The app
runs in a process of its own under uvicorn as ``fable serve`` runs it; this process is its
client (httpx, one kept-alive connection, an API key). Two images are uploaded through
``POST /api/images/upload``: a small PNG (a few hundred bytes: an icon) and a 256 KB JPEG (its
magic bytes, then random ones: a photo's size). Timed, one request at a time after a warm-up,
taking turns: ``GET /api/health`` (the HTTP floor, no auth, no database) and each image (auth,
the row by id and owner, the file read, the bytes sent). Target: an image served from cache
p50 < 3 ms. Results go to the "images" section of docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
import random
import struct
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.core import _make_user
from bench.harness.bench import Bench, Measured
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.report import Figure
from bench.harness.serving import free_port, start_servers, stop
from bench.harness.session import session
from fable_core.config import Settings, load_settings
from fable_core.identity.accounts import create_api_key
from fable_core.runtime import Fable

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    runs: int = option(2000, "requests of each kind")
    database_url: str | None = option(None, "use this database instead of a fresh embedded one")


WARMUP = 50
PHOTO_BYTES = 256 * 1024


@dataclass
class Result:
    sizes: dict[str, int] = field(default_factory=dict)  # what -> bytes served
    calls: dict[str, list[float]] = field(default_factory=dict)  # what -> seconds

    def p(self, name: str, q: float) -> float:
        ms = sorted(s * 1000 for s in self.calls[name])
        return ms[min(len(ms) - 1, round(q * (len(ms) - 1)))]


def _icon() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + b"\x20\x60\xc0" * 16
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 16, 16, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(row * 16)) + chunk(b"IEND", b""))


def _photo() -> bytes:
    return b"\xff\xd8\xff\xe0" + random.Random(7).randbytes(PHOTO_BYTES - 4)


async def _key(settings: Settings) -> str:
    fable = await Fable.open(settings)  # migrates the fresh database
    try:
        me = await _make_user(fable)
        async with fable.db.transaction() as s:
            _, key = await create_api_key(s, me.user_id, "bench")
        return key
    finally:
        await fable.close()


def measure(port: int, key: str, runs: int) -> Result:
    result = Result()
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {key}"},
                      timeout=10) as http:
        paths = {"GET /api/health": "/api/health"}
        for name, content in (("icon PNG", _icon()), ("256 KB JPEG", _photo())):
            saved = http.post("/api/images/upload", content=content,
                              headers={"content-type": "application/octet-stream"})
            saved.raise_for_status()
            paths[f"{name} ({len(content):,} bytes)"] = saved.json()["url"]
        for name, path in paths.items():
            result.calls[name] = []
            for _ in range(WARMUP):
                http.get(path).raise_for_status()
            result.sizes[name] = len(http.get(path).content)
        for _ in range(runs):  # the requests take turns: the machine drifts
            for name, path in paths.items():
                begun = time.perf_counter()
                answer = http.get(path)
                elapsed = time.perf_counter() - begun
                assert answer.status_code == 200 and len(answer.content) == result.sizes[name]
                result.calls[name].append(elapsed)
    return result


def figures(r: Result) -> list[Figure]:
    [icon, photo] = [name for name in r.calls if name != "GET /api/health"]
    return [Figure("icon served p50", r.p(icon, .5), "ms", "time"),
            Figure("256 KB image served p50", r.p(photo, .5), "ms", "time")]


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    rows = [f"| {name} | {len(samples)} | {machine.ms(r.p(name, .5))} | {machine.ms(r.p(name, .95))} |"
            for name, samples in r.calls.items()]
    worst = max(machine.normalise(r.p(name, .5), "time") for name in r.calls if name != "GET /api/health")
    return "\n".join([
        "## Images (`python -m bench.images`)",
        "",
        ("Cached images served from `GET /api/images/{id}` over real HTTP: the app in a process of its own "
         "under uvicorn (as `fable serve`), this process its client on one kept-alive connection with an API "
         "key; an icon PNG and a 256 KB JPEG uploaded first through `POST /api/images/upload`. One request at "
         "a time, taking turns with `GET /api/health` (the HTTP floor: no auth, no database). Each image "
         "request authenticates, loads the row by id and owner, reads the file and sends it. Cells are ms "
         "(client-side, the whole request)."),
        "",
        machine.describe(),
        "",
        "| Request | Samples | p50 | p95 |",
        "|---|---:|---:|---:|",
        *rows,
        "",
        memory.describe(),
        "",
        "| Target (judged at the reference speed) | Measured | Goal | Met |",
        "|---|---|---|---|",
        f"| an image served from cache, p50 (the slower of the two) | {worst:.2f} ms | < 3 ms | "
        f"{'yes' if worst < 3 else '**no**'} |",
    ])


def _measure(o: Options) -> Measured[Result]:
    with tempfile.TemporaryDirectory(prefix="fable-bench-") as tmp, session(Path(tmp), o.database_url) as bench:
        settings = load_settings({}, database_url=bench.database_url, fable_data_dir=Path(tmp), llm_provider="none")
        key = asyncio.run(_key(settings))
        port = free_port()
        procs = start_servers("web", bench.database_url, port, "/api/health", data_dir=Path(tmp))
        try:
            result = measure(port, key, o.runs)
        finally:
            stop(procs)
    return bench.measured(result)


BENCH = Bench("images", __doc__, Options, _measure, render, figures, quick=Options(runs=50))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
