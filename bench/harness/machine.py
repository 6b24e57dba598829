"""How fast and how busy the machine was while a bench ran, and figures normalised by it.

Every bench calls :func:`record` at its start and :meth:`Machine.finish` at its end (through
:func:`bench.harness.session.session`). Each snapshot holds:

- ``reference_ms`` (:func:`bench.harness.stats.reference_ms`): the best of 5 timings of a fixed piece of
  pure Python work. On the shared 2-core development machine it moves between about 9.5 and
  17 ms from one minute to the next, with no change to the code under test;
- ``wakeup_us`` (:func:`bench.harness.stats.wakeup_us`): the median round trip between two processes,
  which every client/server/PostgreSQL call pays several times;
- the 1-minute load average (above the core count, other work competed for the cores).

**Normalisation.** A figure "at the reference speed" is the raw figure scaled as if the
reference workload had taken :data:`REFERENCE_MS` (10 ms, a quiet moment of that machine):

    time at reference = raw time x REFERENCE_MS / reference      (ms, seconds: lower is better)
    rate at reference = raw rate x reference / REFERENCE_MS      (calls/s, notes/s: higher is better)

where ``reference`` is the mean of ``reference_ms`` at the bench's start and end. It is a
first-order correction for a slower or faster CPU (the Python on both ends of a call runs at
the reference workload's speed), not for waits: time spent waking processes (``wakeup_us``),
on disk or behind other tenants' work (the load average) is printed beside it, not removed.
Memory and byte counts are never scaled.
"""

from __future__ import annotations

import os
import platform
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from bench.harness.stats import reference_ms, wakeup_us

__all__ = ["REFERENCE_MS", "Kind", "Machine", "Snapshot", "record"]

REFERENCE_MS = 10.0
Kind = Literal["time", "rate", "other"]  # how a figure scales with the machine's speed


@dataclass(frozen=True)
class Snapshot:
    reference_ms: float
    wakeup_us: float
    load_average: float

    @classmethod
    def now(cls) -> Snapshot:
        return cls(reference_ms(), wakeup_us(), os.getloadavg()[0])


@dataclass
class Machine:
    """The snapshots taken at a bench's start and end, and the normalisation they give."""

    start: Snapshot
    end: Snapshot | None = None
    cores: int = field(default_factory=lambda: os.cpu_count() or 1)
    arch: str = field(default_factory=platform.machine)
    python: str = field(default_factory=platform.python_version)

    def finish(self) -> None:
        self.end = Snapshot.now()

    @property
    def snapshots(self) -> list[Snapshot]:
        return [self.start] if self.end is None else [self.start, self.end]

    @property
    def reference(self) -> float:
        """The mean reference_ms of the snapshots: what the figures are normalised by."""
        return sum(s.reference_ms for s in self.snapshots) / len(self.snapshots)

    def normalise(self, value: float, kind: Kind) -> float:
        if kind == "time":
            return value * REFERENCE_MS / self.reference
        if kind == "rate":
            return value * self.reference / REFERENCE_MS
        return value

    def ms(self, raw_ms: float) -> str:
        """A table cell: the raw milliseconds and, in parentheses, at the reference speed."""
        return f"{raw_ms:.2f} ({self.normalise(raw_ms, 'time'):.2f})"

    def rate(self, raw: float) -> str:
        return f"{raw:,.0f} ({self.normalise(raw, 'rate'):,.0f})"

    def describe(self) -> str:
        """One paragraph for a section: the machine and the snapshots, start then end."""
        def both(values: list[str], unit: str) -> str:
            return " then ".join(values) + (f" {unit}" if unit else "")

        snaps = self.snapshots
        return (f"Machine: {self.cores} cores, {self.arch}, Python {self.python}. Reference workload "
                f"(`bench.harness.stats.reference_ms`) at start and end: "
                f"{both([f'{s.reference_ms:.1f}' for s in snaps], 'ms')}; process round trip "
                f"(`wakeup_us`): {both([f'{s.wakeup_us:.0f}' for s in snaps], 'us')}; 1-minute load "
                f"average: {both([f'{s.load_average:.1f}' for s in snaps], '')}. Figures in parentheses "
                f"are at the reference speed of {REFERENCE_MS:.0f} ms (raw x {REFERENCE_MS:.0f} / "
                f"{self.reference:.1f} for times, the inverse for rates; see the top of this page).")

    def as_json(self) -> dict[str, Any]:
        return {"reference": self.reference, "snapshots": [asdict(s) for s in self.snapshots],
                "cores": self.cores, "arch": self.arch, "python": self.python}


def record() -> Machine:
    """The machine now: call at a bench's start, then ``finish()`` at its end."""
    return Machine(Snapshot.now())
