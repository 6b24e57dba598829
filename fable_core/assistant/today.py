"""Today as a prompt says it: the weekday, the date, the user's zone and the coming week's dates.

A small model given only ``2026-12-07`` turned "on Friday" into today: it cannot work out a
weekday from a date. With the weekday and the next seven dates written out, it only has to copy
one (and capture does not even ask: Fable's own parser reads dates, :mod:`.capture`)."""

from __future__ import annotations

from datetime import date, timedelta

__all__ = ["today_line"]


def today_line(today: date, zone: str) -> str:
    """``Monday 7 December 2026 (2026-12-07, Europe/London); the coming days: Tuesday 2026-12-08, …``."""
    coming = ", ".join(f"{d:%A} {d.isoformat()}" for d in (today + timedelta(days=n) for n in range(1, 8)))
    return f"{today:%A} {today.day} {today:%B %Y} ({today.isoformat()}, {zone}); the coming days: {coming}"
