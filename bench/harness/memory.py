"""Proportional set size (PSS) of the bench's processes, sampled until the peak is known.

PSS counts each shared page once, divided among the processes sharing it, so the PostgreSQL
postmaster and its backends (which share most of their memory) add up to what they really
occupy; RSS summed over them would count the shared buffers once per backend.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import psutil

__all__ = ["PeakMemory", "pss_mb"]

Pids = Callable[[], list[int]]


def pss_mb(pids: list[int]) -> float:
    """The summed PSS of ``pids`` in MB (processes that ended in the meantime count nothing)."""
    total = 0
    for pid in pids:
        try:
            total += psutil.Process(pid).memory_full_info().pss
        except psutil.Error:
            continue
    return total / 2**20


@dataclass
class PeakMemory:
    """Samples the summed PSS of each named group of processes every ``interval`` seconds in a
    thread (``start()`` .. ``stop()``); ``peak`` holds each group's highest sum, ``peak_total``
    the highest sum of all groups at one moment."""

    groups: dict[str, Pids]
    interval: float = 1.0
    peak: dict[str, float] = field(default_factory=dict)
    peak_total: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def sample(self) -> dict[str, float]:
        now = {name: pss_mb(pids()) for name, pids in self.groups.items()}
        for name, mb in now.items():
            self.peak[name] = max(self.peak.get(name, 0.0), mb)
        self.peak_total = max(self.peak_total, sum(now.values()))
        return now

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="bench-memory", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def describe(self) -> str:
        parts = ", ".join(f"{name} {mb:,.0f} MB" for name, mb in self.peak.items())
        return (f"Peak memory (PSS, sampled every {self.interval:g} s): {parts}; together at most "
                f"{self.peak_total:,.0f} MB at one moment.")
