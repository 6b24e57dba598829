"""Timing helpers: run a coroutine many times and summarise its latency."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = ["Latency", "measure", "reference_ms", "summarise", "wakeup_us"]


@dataclass(frozen=True)
class Latency:
    name: str
    samples: int
    p50_ms: float
    p99_ms: float
    mean_ms: float

    def row(self, ms: Callable[[float], str] = "{:.2f}".format) -> str:
        """A table row; ``ms`` formats each figure (``Machine.ms`` adds it at the reference speed)."""
        return f"| {self.name} | {self.samples} | {ms(self.p50_ms)} | {ms(self.p99_ms)} | {ms(self.mean_ms)} |"


def summarise(name: str, seconds: list[float]) -> Latency:
    ms = sorted(s * 1000 for s in seconds)
    p99 = ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]
    return Latency(name, len(ms), statistics.median(ms), p99, statistics.fmean(ms))


async def measure(name: str, runs: int, fn: Callable[[int], Awaitable[object]], warmup: int = 20) -> Latency:
    """Call ``fn(i)`` ``warmup`` times untimed, then ``runs`` times timed, one after another."""
    for i in range(min(warmup, runs)):
        await fn(i)
    seconds = []
    for i in range(runs):
        started = time.perf_counter()
        await fn(i)
        seconds.append(time.perf_counter() - started)
    return summarise(name, seconds)


def reference_ms(rounds: int = 5) -> float:
    """Milliseconds this machine takes, at best of ``rounds``, for a fixed piece of pure Python
    work (JSON encode and decode of a note-sized dict, 2,000 times).

    The shared 2-core machine's speed drifts by 1.5-2x from one minute to the next (other
    tenants, frequency), with a quiet load average all the while; printing this next to the
    results says how fast the machine was while they were taken.
    """
    import json

    doc = {"id": 5000, "title": "A note title", "tags": ["a", "b/c"], "body": "text " * 60, "version": 3,
           "status": None, "sections": ["One", "Two"], "updated_at": "2026-12-02T10:00:00+00:00"}
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(2000):
            json.loads(json.dumps(doc))
        best = min(best, time.perf_counter() - started)
    return best * 1000


def wakeup_us(trips: int = 2000) -> float:
    """Median microseconds for one round trip between two processes over a socket pair.

    Every MCP or REST call crosses processes several times (client, server, PostgreSQL and
    back), so how fast this machine wakes a waiting process moves every latency figure; on this
    virtual machine it swings between about 20 and 150 us. Printed with the results for that
    reason. POSIX only (fork).
    """
    import os
    import socket

    parent, child = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the echoing process
        parent.close()
        for _ in range(trips):
            child.sendall(child.recv(64))
        os._exit(0)
    child.close()
    times = []
    for _ in range(trips):
        started = time.perf_counter()
        parent.sendall(b"x" * 32)
        parent.recv(64)
        times.append(time.perf_counter() - started)
    os.waitpid(pid, 0)
    parent.close()
    return statistics.median(times) * 1e6
