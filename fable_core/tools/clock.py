"""The user's calendar: "today" is the date in the user's timezone, not the server's.

The timezone is the per-user setting ``timezone`` (an IANA name such as "Europe/Paris"), declared
once in :mod:`fable_core.people.preferences.personal`; a stored value that is no longer a known zone
reads as its default, UTC, rather than failing a listing.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.database import Database
from fable_core.people.preferences.personal import TIMEZONE
from fable_core.tools.caller import Caller
from fable_core.tools.preferences import read_setting

__all__ = ["today_for", "today_in", "user_timezone", "user_today"]


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
