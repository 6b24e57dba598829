"""A Python HTTP load generator, for when wrk is not installed.

``connections`` concurrent keep-alive connections (httpx, one asyncio process) send requests
back to back for ``duration`` seconds. It spends far more CPU per request than wrk, on the same
2 cores as the app under test, so its figures are lower bounds of what the app serves; the REST
section says which generator took them.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

__all__ = ["Load", "hammer"]


@dataclass
class Load:
    requests: int
    seconds: float
    errors: int
    p50_ms: float
    p99_ms: float


async def hammer(url: str, headers: dict[str, str], *, connections: int, duration: float,
                 body: Callable[[], bytes] | None = None, request_timeout: float = 10) -> Load:
    """GET ``url`` (or POST ``body()`` to it) from ``connections`` loops for ``duration`` seconds."""
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(headers=headers, limits=limits, timeout=request_timeout) as http:
        stop_at = time.perf_counter() + duration

        async def loop() -> None:
            nonlocal errors
            while time.perf_counter() < stop_at:
                started = time.perf_counter()
                try:
                    response = await (http.post(url, content=body()) if body else http.get(url))
                    errors += response.status_code >= 400
                except httpx.HTTPError:
                    errors += 1
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(loop() for _ in range(connections)))
        seconds = time.perf_counter() - started
    ms = sorted(s * 1000 for s in latencies) or [0.0]
    p99 = ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]
    return Load(len(latencies), seconds, errors, statistics.median(ms), p99)
