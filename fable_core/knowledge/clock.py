"""The user's calendar: "today" is the date in the user's timezone, not the server's.

The timezone is the per-user setting ``timezone`` (an IANA name such as "Europe/Paris");
when it is missing or not a known zone, Fable falls back to UTC rather than failing a listing.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.caller import Caller
from fable_core.db.models import Setting

__all__ = ["TIMEZONE_SETTING", "user_timezone", "user_today"]

TIMEZONE_SETTING = "timezone"


async def user_timezone(session: AsyncSession, caller: Caller) -> str:
    """The caller's IANA timezone name, or "UTC"."""
    value = await session.scalar(
        select(Setting.value).where(Setting.user_id == caller.user_id, Setting.key == TIMEZONE_SETTING)
    )
    if not isinstance(value, str) or not value.strip():
        return "UTC"
    try:
        ZoneInfo(value.strip())
    except (ZoneInfoNotFoundError, ValueError):
        return "UTC"
    return value.strip()


async def user_today(session: AsyncSession, caller: Caller) -> tuple[date, str]:
    """Today's date where the caller lives, and the timezone it was computed in."""
    name = await user_timezone(session, caller)
    return datetime.now(UTC).astimezone(ZoneInfo(name)).date(), name
