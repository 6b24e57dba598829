"""The user's calendar: "today" is the date in the user's timezone, not the server's.

The timezone is the per-user setting ``timezone`` (an IANA name such as "Europe/Paris"), declared
here because every domain's "today", "overdue" and "this week" read it; a stored value that is no
longer a known zone reads as its default, UTC, rather than failing a listing. A zone that is nearly
right is refused naming the one it probably is (``Europe/paris``: ``Europe/Paris``).
"""

from __future__ import annotations

import functools
from datetime import UTC, date, datetime
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import AfterValidator, StringConstraints
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.database import Database
from fable_core.tools.caller import Caller
from fable_core.tools.preferences import read_setting, setting
from fable_core.tools.suggest import closest, hint

__all__ = ["TIMEZONE", "TimeZoneName", "check_zone", "today_for", "today_in", "user_timezone", "user_today"]


@functools.cache
def _zones() -> frozenset[str]:
    # a walk of the system's zone files (tens of ms): only when a name was wrong
    return frozenset(available_timezones())


def check_zone(name: str) -> str:
    """``name`` if it is an IANA time zone this machine knows; ValueError otherwise."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        matches = closest(name, _zones())
        advice = hint(matches) or "use an IANA name such as 'Europe/Paris', 'America/New_York' or 'UTC'"
        raise ValueError(f"{name[:64]!r} is not a known time zone; {advice}") from None
    return name


TimeZoneName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64),
                         AfterValidator(check_zone)]
TIMEZONE = setting("timezone", TimeZoneName, "UTC",
                   "Your IANA time zone (Europe/Paris): what today, overdue and due dates mean.",
                   chosen_matters=True)  # UTC chosen is not UTC by default: the web UI asks before it moves


async def user_timezone(session: AsyncSession, caller: Caller) -> str:
    """The caller's IANA timezone name, or "UTC"."""
    return await read_setting(session, caller, TIMEZONE)


def today_in(zone: str) -> date:
    """Today's date in the IANA time zone ``zone`` (one the ``timezone`` key accepted)."""
    return datetime.now(UTC).astimezone(ZoneInfo(zone)).date()


async def user_today(session: AsyncSession, caller: Caller) -> tuple[date, str]:
    """Today's date where the caller lives, and the timezone it was computed in. Tools ask
    ``ctx.today()``; code outside a tool call asks :func:`today_for`."""
    name = await user_timezone(session, caller)
    return today_in(name), name


async def today_for(db: Database, caller: Caller) -> date:
    """Today where the caller lives, outside a tool call (a chat turn's prompt, MCP prompts)."""
    async with db.reading() as session:
        today, _ = await user_today(session, caller)
    return today
