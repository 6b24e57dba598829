"""Today, as a test asks for it: when the test runs, never when its module was imported (a run
that crosses midnight UTC had its journal tests expect yesterday)."""

from __future__ import annotations

from datetime import UTC, date, datetime

__all__ = ["today"]


def today() -> date:
    """Today in UTC (the zone of a user who set none), now."""
    return datetime.now(UTC).date()
