"""Which user a local ``fable mcp`` acts as: ``--user``, else the only one, else a new first one."""

from __future__ import annotations

import getpass
import logging
import re

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.accounts import create_user, find_user
from fable_core.caller import Caller
from fable_core.db.models import User
from fable_core.errors import Conflict, InvalidInput
from fable_core.runtime import Fable

__all__ = ["local_caller"]

_log = logging.getLogger("fable_mcp")


async def local_caller(fable: Fable, username: str | None) -> Caller:
    """The user a local stdio server acts as (see the module docstring)."""
    async with fable.db.transaction() as session:
        user = await find_user(session, username) if username else await _only_user(session)
    return Caller(user_id=user.id, username=user.username, role=user.role, surface="mcp")


async def _only_user(session: AsyncSession) -> User:
    """The only user, or a new first one.

    Servers starting together on an empty database all try to create it; the losers get a
    Conflict from :func:`create_user` and act as the user the winner created.
    """
    users = list((await session.execute(select(User).order_by(User.id).limit(2))).scalars())
    if len(users) > 1:
        count = await session.scalar(select(func.count(User.id)))
        raise InvalidInput(f"this Fable has {count} users: pass --user NAME", field="user")
    if users:
        return users[0]
    name = _default_username()
    try:
        user = await create_user(session, name)
    except Conflict:
        return await find_user(session, name)
    _log.warning("created the first user %r", user.username)
    return user


def _default_username() -> str:
    try:
        name = re.sub(r"[^A-Za-z0-9_.-]", "", getpass.getuser())
    except (KeyError, OSError):
        name = ""
    return name if len(name) >= 2 else "me"
