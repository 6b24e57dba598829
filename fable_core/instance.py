"""Instance-wide settings an admin changes at run time, stored in ``instance_settings``.

- **registration**: whether anyone may sign up (default ``FABLE_OPEN_REGISTRATION``).
- **public URL**: the address people reach this Fable at, for links that leave it (password
  reset and verification mail). Links in mail must never come from a request's headers: a
  forged ``Host`` would send a reset token to the forger's site. The URL is ``FABLE_BASE_URL``
  when configured; otherwise the one pinned when the first admin registered (from a Host the
  host policy admitted), which admins see and change in their settings. With neither, mail
  that needs a link is not sent.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlsplit

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.config import Settings
from fable_core.db.models import InstanceSetting
from fable_core.errors import InvalidInput

__all__ = ["PublicUrl", "check_public_url", "pin_public_url", "public_url", "registration_open",
           "set_public_url", "set_registration_open"]

_REGISTRATION = "open_registration"
_PUBLIC_URL = "public_url"
PublicUrl = tuple[str | None, Literal["configured", "pinned", "unset"]]


async def _get(session: AsyncSession, key: str) -> Any:
    return await session.scalar(select(InstanceSetting.value).where(InstanceSetting.key == key))


async def _put(session: AsyncSession, key: str, value: Any, *, overwrite: bool = True) -> None:
    stmt = pg_insert(InstanceSetting).values(key=key, value=value)
    if overwrite:
        stmt = stmt.on_conflict_do_update(index_elements=[InstanceSetting.key],
                                          set_={"value": value, "updated_at": func.now()})
    else:
        stmt = stmt.on_conflict_do_nothing(index_elements=[InstanceSetting.key])
    await session.execute(stmt)


async def registration_open(session: AsyncSession, default: bool) -> bool:
    """Whether anyone may register: the admin's run-time choice, else the configured default."""
    value = await _get(session, _REGISTRATION)
    return default if value is None else bool(value)


async def set_registration_open(session: AsyncSession, is_open: bool) -> None:
    await _put(session, _REGISTRATION, is_open)


def check_public_url(url: str) -> str:
    """``url`` as a public URL: http(s), a host, no path beyond ``/``, no query; InvalidInput else."""
    url = url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path or parts.query \
            or parts.fragment or parts.username or parts.password:
        raise InvalidInput(f"public URL must look like https://fable.example.com, not {url[:100]!r}",
                           field="public_url")
    return url


async def public_url(session: AsyncSession, settings: Settings) -> PublicUrl:
    """The public URL and where it comes from: configured, pinned, or unset (None)."""
    if settings.fable_base_url:
        return settings.fable_base_url.rstrip("/"), "configured"
    pinned = await _get(session, _PUBLIC_URL)
    return (str(pinned), "pinned") if pinned else (None, "unset")


async def pin_public_url(session: AsyncSession, url: str) -> None:
    """Remember ``url`` unless one is pinned already (the first admin's registration)."""
    await _put(session, _PUBLIC_URL, check_public_url(url), overwrite=False)


async def set_public_url(session: AsyncSession, url: str) -> str:
    """An admin's choice of public URL (used while FABLE_BASE_URL is not set)."""
    url = check_public_url(url)
    await _put(session, _PUBLIC_URL, url)
    return url
