"""Instance-wide settings an admin changes at run time, stored in ``instance_settings``.

- **registration**: who may create an account: ``open`` (anyone), ``invite`` (only with an
  invitation an admin made) or ``closed`` (nobody: an operator creates accounts from a shell).
  The first account can always be created. Until an admin chooses, the configured default
  applies (``FABLE_REGISTRATION``, or the older ``FABLE_OPEN_REGISTRATION``). An instance that
  stored the older boolean (``open_registration``) keeps its meaning: true is ``open``, false
  ``invite`` (invitations always worked while it was closed).
- **public URL**: the address people reach this Fable at, for links that leave it (password
  reset and verification mail). Links in mail must never come from a request's headers: a
  forged ``Host`` would send a reset token to the forger's site. The URL is ``FABLE_BASE_URL``
  when configured; otherwise the one pinned when the first admin registered (from a Host the
  host policy admitted), which admins see and change in their settings. With neither, mail
  that needs a link is not sent.
- **mail**: the SMTP server admins configure in the UI (:mod:`fable_core.admin.mail_settings`).
"""

from __future__ import annotations

from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.admin.audit import Actor, Target, audit, require_admin
from fable_core.config import Settings
from fable_core.db.models import InstanceSetting
from fable_core.errors import InvalidInput
from fable_core.tools.caller import Caller

__all__ = ["REGISTRATION_MODES", "PublicUrl", "RegistrationMode", "change_public_url", "change_registration",
           "check_public_url", "link_base", "pin_public_url", "public_url", "registration_mode", "set_public_url",
           "set_registration_mode", "store", "value"]

RegistrationMode = Literal["open", "invite", "closed"]
REGISTRATION_MODES: tuple[RegistrationMode, ...] = get_args(RegistrationMode)
_REGISTRATION = "registration"
_OLD_REGISTRATION = "open_registration"  # a boolean, before there were three modes
_PUBLIC_URL = "public_url"
PublicUrl = tuple[str | None, Literal["configured", "pinned", "unset"]]


async def value(session: AsyncSession, key: str) -> Any:
    """The stored value of an instance setting, or None."""
    return await session.scalar(select(InstanceSetting.value).where(InstanceSetting.key == key))


async def store(session: AsyncSession, key: str, new: Any, *, overwrite: bool = True) -> None:
    """Store an instance setting (``overwrite=False``: only if it has none yet)."""
    stmt = pg_insert(InstanceSetting).values(key=key, value=new)
    if overwrite:
        stmt = stmt.on_conflict_do_update(index_elements=[InstanceSetting.key],
                                          set_={"value": new, "updated_at": func.now()})
    else:
        stmt = stmt.on_conflict_do_nothing(index_elements=[InstanceSetting.key])
    await session.execute(stmt)


async def registration_mode(session: AsyncSession, settings: Settings) -> RegistrationMode:
    """Who may register now: the admin's choice (or the older boolean), else the configured default."""
    rows = await session.execute(select(InstanceSetting.key, InstanceSetting.value).where(
        InstanceSetting.key.in_((_REGISTRATION, _OLD_REGISTRATION))))
    stored: dict[str, Any] = dict(rows.all())
    mode = stored.get(_REGISTRATION)
    if mode in REGISTRATION_MODES:
        return mode  # type: ignore[no-any-return]
    if _OLD_REGISTRATION in stored:
        return "open" if stored[_OLD_REGISTRATION] else "invite"
    return settings.registration_default


async def set_registration_mode(session: AsyncSession, mode: str) -> RegistrationMode:
    if mode not in REGISTRATION_MODES:
        raise InvalidInput(f"registration must be one of {', '.join(REGISTRATION_MODES)}, not {mode[:50]!r}",
                           field="registration")
    await store(session, _REGISTRATION, mode)
    await session.execute(delete(InstanceSetting).where(InstanceSetting.key == _OLD_REGISTRATION))
    return mode


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
    pinned = await value(session, _PUBLIC_URL)
    return (str(pinned), "pinned") if pinned else (None, "unset")


async def link_base(session: AsyncSession, settings: Settings, caller: Caller) -> str | None:
    """This Fable's URL for links shown to the person asking (an invitation link, an MCP client's
    configuration): the public URL, else the one ``caller`` reached Fable at, whose Host its
    surface admitted (:attr:`Caller.base_url`; None from a shell). Links that leave by mail use
    the public URL only."""
    url, _ = await public_url(session, settings)
    return url or caller.base_url


async def pin_public_url(session: AsyncSession, url: str) -> None:
    """Remember ``url`` unless one is pinned already (the first admin's registration)."""
    await store(session, _PUBLIC_URL, check_public_url(url), overwrite=False)


async def set_public_url(session: AsyncSession, url: str) -> str:
    """An admin's choice of public URL (used while FABLE_BASE_URL is not set)."""
    url = check_public_url(url)
    await store(session, _PUBLIC_URL, url)
    return url


async def change_registration(session: AsyncSession, actor: Actor, settings: Settings, mode: str) -> str:
    await require_admin(session, actor)
    before = await registration_mode(session, settings)
    after = await set_registration_mode(session, mode)
    if after != before:
        await audit(session, actor, "instance.registration", Target("instance"),
                    registration={"from": before, "to": after})
    return after


async def change_public_url(session: AsyncSession, actor: Actor, settings: Settings, url: str) -> str:
    await require_admin(session, actor)
    before, _ = await public_url(session, settings)
    after = await set_public_url(session, url)
    if after != before:
        await audit(session, actor, "instance.public_url", Target("instance"), public_url={"from": before, "to": after})
    return after
