"""The moments of the last few days in the morning note: the ``moments`` section (order 50)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.daily.journal.sections import PrepDay, section
from fable_core.daily.moments.moments import moments_between
from fable_core.tools.caller import Caller

__all__ = ["DAYS", "MOST", "recent_moments", "render_moments"]

DAYS = 3  # the days before the one prepared
MOST = 12


def render_moments(moments: list[dict[str, Any]]) -> str:
    """One line a moment: its day and time, text, mood and tags."""
    lines = []
    for m in moments:
        extra = ", ".join(x for x in (m.get("mood"), " ".join(f"#{t}" for t in m.get("tags", []))) if x)
        lines.append(f"- {m['when']}: {m['text']}" + (f" ({extra})" if extra else ""))
    return "\n".join(lines)


@section("moments", order=50, render=render_moments, title="Recent moments")
async def recent_moments(session: AsyncSession, caller: Caller, day: PrepDay) -> list[dict[str, Any]] | None:
    """The moments of the :data:`DAYS` days before the day prepared (at most :data:`MOST`, the newest)."""
    found = await moments_between(session, caller, day.start - timedelta(days=DAYS), day.start, MOST)
    return [{"when": f"{m.at.astimezone(day.zone):%a %d %b %H:%M}", "text": m.text[:500],
             **m.model_dump(include={"mood", "tags", "location"}, exclude_defaults=True)} for m in found] or None
