"""How slow this machine is right now, as a factor on the suite's waiting bounds.

The bounds of waiting helpers (a browser's 10 s for an element, ``until``'s 5 s) were set on the
quiet 2-core machine; on a loaded one everything takes longer and a fixed bound fails a test that
only waited. :func:`factor` measures a fixed piece of work (``bench.harness.stats.reference_ms``,
10 ms there) and says how many times slower it runs now, between 1 and :data:`MOST`, measured
again every :data:`FRESH_FOR` seconds; :func:`scaled` stretches a bound by it. Bounds that are
the product's (a stale heartbeat, a rate limit) are not stretched: only how long a test waits.
"""

from __future__ import annotations

import time

from bench.harness.stats import reference_ms

__all__ = ["MOST", "factor", "scaled"]

REFERENCE_MS = 10.0  # the reference work on the quiet machine the bounds were tuned on
MOST = 5.0  # past this a wait is not slow, it is stuck: pytest-timeout's business
FRESH_FOR = 30.0  # seconds a measurement holds
_measured: dict[str, float] = {}  # "at": when, "factor": what


def factor() -> float:
    """Times slower than the quiet machine, now (1 to MOST)."""
    now = time.monotonic()
    if not _measured or now - _measured["at"] > FRESH_FOR:
        _measured.update(at=now, factor=min(MOST, max(1.0, reference_ms(rounds=3) / REFERENCE_MS)))
    return _measured["factor"]


def scaled(seconds: float) -> float:
    """``seconds`` of waiting, stretched by how slow the machine is now."""
    return seconds * factor()
