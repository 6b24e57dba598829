"""The user's calendar: "today" is the date in the user's timezone, not the server's.

The timezone is the per-user setting ``timezone`` (an IANA name such as "Europe/Paris");
when it is missing or not a known zone, Fable falls back to UTC rather than failing a listing.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.access import owned_by
from fable_core.caller import Caller
from fable_core.db.database import Database
from fable_core.db.models import Setting

__all__ = ["TIMEZONE_SETTING", "today_for", "user_timezone", "user_today"]

TIMEZONE_SETTING = "timezone"


async def user_timezone(session: AsyncSession, caller: Caller) -> str:
    """The caller's IANA timezone name, or "UTC"."""
    value = await session.scalar(
        select(Setting.value).where(owned_by(Setting, caller), Setting.key == TIMEZONE_SETTING)
    )
    if not isinstance(value, str) or not value.strip():
        return "UTC"
    try:
        ZoneInfo(value.strip())
    except (ZoneInfoNotFoundError, ValueError):
        return "UTC"
    return value.strip()


async def user_today(session: AsyncSession, caller: Caller) -> tuple[date, str]:
    """Today's date where the caller lives, and the timezone it was computed in. Tools ask
    ``ctx.today()``; code outside a tool call asks :func:`today_for`."""
    name = await user_timezone(session, caller)
    return datetime.now(UTC).astimezone(ZoneInfo(name)).date(), name


async def today_for(db: Database, caller: Caller) -> date:
    """Today where the caller lives, outside a tool call (a chat turn's prompt, MCP prompts)."""
    async with db.reading() as session:
        today, _ = await user_today(session, caller)
    return today
