"""Today as a prompt says it: the weekday, the date, the user's zone and the coming week's days.

A small model given only ``2026-12-07`` turned "on Friday" into today: it cannot work out a
weekday from a date. With the weekday and the next seven dates written out, it only has to copy
one (and capture does not even ask: Fable's own parser reads dates, :mod:`.capture`)."""

from __future__ import annotations

from datetime import date, timedelta

__all__ = ["today_line"]


def today_line(today: date, zone: str) -> str:
    """``Monday 2026-12-07 (Europe/London); coming: Tue 8, Wed 9, … Mon 14`` (a month's name where
    one begins). Short on purpose: a small model's tokenizer spends a token a digit, and a whole ISO
    date a day would cost a 256-token context half its room."""
    days = [today + timedelta(days=n) for n in range(1, 8)]
    coming = ", ".join(f"{d:%a} {d.day}" + (f" {d:%b}" if d.day == 1 or (d.month != today.month and d == days[0])
                                             else "") for d in days)
    return f"{today:%A} {today.isoformat()} ({zone}); coming: {coming}"
