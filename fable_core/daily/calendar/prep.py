"""The calendar's part of a day's morning note: that day's events, in the user's zone.

Each entry is the event's title, its start time (``"09:00"``; an event that began the day before
says so) or ``all_day``, and its location when it has one. At most :data:`MAX_EVENTS` are listed.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from fable_core.daily.calendar.occurrences import occurrences_between, rows_between
from fable_core.daily.journal.sections import PrepDay, section

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from fable_core.tools.caller import Caller

__all__ = ["MAX_EVENTS", "render_events", "todays_events"]

MAX_EVENTS = 30


def render_events(entries: list[dict[str, Any]]) -> str:
    """The section as Markdown lines: ``- 09:00 Standup (Room 4)``, all-day events first."""
    lines = []
    for entry in entries:
        when = "All day" if entry.get("all_day") else entry["time"]
        where = f" ({entry['location']})" if entry.get("location") else ""
        lines.append(f"- {when}: {entry['title']}{where}")
    return "\n".join(lines)


@section("events", order=20, render=render_events, title="Today")
async def todays_events(session: AsyncSession, caller: Caller, day: PrepDay) -> list[dict[str, Any]] | None:
    """The day's occurrences, all-day ones first, then by start."""
    rows = await rows_between(session, caller, day.start, day.end)
    entries: list[dict[str, Any]] = []
    for occurrence in occurrences_between(rows, day.start, day.end, day.zone):
        if len(entries) == MAX_EVENTS:
            break
        entry: dict[str, Any] = {"title": occurrence.row.title}
        if isinstance(occurrence.start, datetime):
            local = occurrence.start.astimezone(day.zone)
            entry["time"] = local.strftime("%H:%M") if local.date() == day.day else \
                f"since {local.strftime('%a %H:%M')}"
        else:
            entry["all_day"] = True
        if occurrence.row.location:
            entry["location"] = occurrence.row.location
        entries.append(entry)
    entries.sort(key=lambda e: not e.get("all_day"))  # stable: the timed ones keep their order
    return entries or None
