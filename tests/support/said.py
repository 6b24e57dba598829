"""What a background step logged, waited for: a start-up probe says its one line a moment after
the Fable opened."""

from __future__ import annotations

import asyncio

import pytest

__all__ = ["lines_said"]


async def lines_said(caplog: pytest.LogCaptureFixture, starting: str, within: float) -> list[str]:
    """The captured log messages starting with ``starting``, once there is one (at most
    ``within`` seconds of waiting; none: an empty list)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        found = [r.getMessage() for r in caplog.records if r.getMessage().startswith(starting)]
        if found or loop.time() >= deadline:
            return found
        await asyncio.sleep(0.05)
