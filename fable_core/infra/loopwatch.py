"""How late the event loop runs: the production half of "nothing heavy on the loop".

A task wakes every :data:`TICK` seconds; how much later than asked it woke is the loop's lag at
that moment, which is what any request waiting on the loop then waited too. The worst lag of
each second is kept for a minute (``/api/health`` reports the worst of the minute) and a lag over
:data:`WARN_AT` is logged, at most once per :data:`LOG_EVERY` seconds with how many more there
were, so a stalled process says so without flooding its log. (The test suite checks each
callback's own CPU time instead: ``tests/support/loopguard.py``.)

It costs one wake-up per tick: nothing measurable. Works on uvloop and asyncio alike.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque

__all__ = ["LOG_EVERY", "TICK", "WARN_AT", "LoopWatch"]

TICK = 0.1  # seconds between wake-ups
WARN_AT = 0.2  # seconds of lag worth a log line
LOG_EVERY = 10.0  # seconds between log lines about lag
WINDOW = 60  # seconds of worst lags kept
_log = logging.getLogger(__name__)


class LoopWatch:
    """The loop's lag, sampled by a task of its own (``start``/``stop``)."""

    def __init__(self, *, tick: float = TICK, warn_at: float = WARN_AT) -> None:
        self.tick = tick
        self.warn_at = warn_at
        self._worst: deque[tuple[int, float]] = deque()  # (second, worst lag in it)
        self._task: asyncio.Task[None] | None = None
        self._logged_at = -LOG_EVERY
        self._unlogged = 0

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="fable-loop-watch")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def worst(self, now: float | None = None) -> float:
        """The worst lag of the last minute, in seconds."""
        now = time.monotonic() if now is None else now
        return max((lag for second, lag in self._worst if second > now - WINDOW), default=0.0)

    def note(self, lag: float, now: float) -> None:
        """Record one sample (the task's, or a test's)."""
        second = int(now)
        if self._worst and self._worst[-1][0] == second:
            if lag > self._worst[-1][1]:
                self._worst[-1] = (second, lag)
        else:
            self._worst.append((second, lag))
        while self._worst and self._worst[0][0] <= now - WINDOW:
            self._worst.popleft()
        if lag < self.warn_at:
            return
        if now - self._logged_at >= LOG_EVERY:
            more = f" ({self._unlogged} more such stalls since the last report)" if self._unlogged else ""
            _log.warning("the event loop was blocked for %.0f ms%s", lag * 1000, more)
            self._logged_at, self._unlogged = now, 0
        else:
            self._unlogged += 1

    async def _run(self) -> None:
        while True:
            asked = time.monotonic()
            await asyncio.sleep(self.tick)
            now = time.monotonic()
            self.note(max(0.0, now - asked - self.tick), now)
