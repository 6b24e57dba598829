"""Which user a local ``fable mcp`` acts as: ``--user``, else the only one, else a new first one."""

from __future__ import annotations

import getpass
import logging
import re

from fable_core.identity.accounts import count_users, find_user, only_user
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

__all__ = ["local_caller"]

_log = logging.getLogger("fable_mcp")


async def local_caller(fable: Fable, username: str | None) -> Caller:
    """The user a local stdio server acts as (see the module docstring)."""
    async with fable.db.transaction() as session:
        if username:
            user = await find_user(session, username)
        else:
            existing = await count_users(session)
            user = await only_user(session, _default_username())
            if not existing:
                _log.warning("created the first user %r", user.username)
    return Caller(user_id=user.id, username=user.username, role=user.role, surface="mcp")


def _default_username() -> str:
    try:
        name = re.sub(r"[^A-Za-z0-9_.-]", "", getpass.getuser())
    except (KeyError, OSError):
        name = ""
    return name if len(name) >= 2 else "me"
