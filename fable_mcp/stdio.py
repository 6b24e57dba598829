"""``fable mcp``: MCP over stdin/stdout for a local user (Claude Desktop and other hosts).

Only protocol goes to stdout: the SDK points fd 1 at stderr while it serves, and the
database is opened inside that window, so even the embedded PostgreSQL's output cannot reach
the wire. Logs go to stderr. The user is ``--user``, else the only user; an empty database
gets its first user (named after ``$USER``), so a fresh install works with no setup.
"""

from __future__ import annotations

import getpass
import logging
import re
import sys

from mcp.server.stdio import stdio_server
from sqlalchemy import func, select

from fable_core.accounts import create_user, find_user
from fable_core.caller import Caller
from fable_core.config import load_settings
from fable_core.db.models import User
from fable_core.errors import FableError, InvalidInput
from fable_core.runtime import Fable
from fable_mcp.server import FableMcp

__all__ = ["local_caller", "run_stdio"]

_log = logging.getLogger("fable_mcp")


def _configure_logging(level: str) -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="fable mcp: %(levelname)s %(name)s: %(message)s")
    logging.getLogger("fable_mcp").setLevel(level.upper())


async def local_caller(fable: Fable, username: str | None) -> Caller:
    """The user a local stdio server acts as (see the module docstring)."""
    async with fable.db.transaction() as session:
        if username:
            user = await find_user(session, username)
        else:
            users = list((await session.execute(select(User).order_by(User.id).limit(2))).scalars())
            if len(users) > 1:
                count = await session.scalar(select(func.count(User.id)))
                raise InvalidInput(f"this Fable has {count} users: pass --user NAME", field="user")
            user = users[0] if users else await create_user(session, _default_username())
            if not users:
                _log.warning("created the first user %r", user.username)
    return Caller(user_id=user.id, username=user.username, role=user.role, surface="mcp")


def _default_username() -> str:
    try:
        name = re.sub(r"[^A-Za-z0-9_.-]", "", getpass.getuser())
    except (KeyError, OSError):
        name = ""
    return name if len(name) >= 2 else "me"


async def run_stdio(username: str | None = None) -> int:
    """Serve MCP on stdin/stdout until the client closes stdin; 1 if startup fails."""
    settings = load_settings()
    _configure_logging(settings.fable_log_level)
    async with stdio_server() as (read_stream, write_stream):
        try:
            fable = await Fable.open(settings)
        except FableError as e:
            print(f"fable mcp: {e.type}: {e.message}", file=sys.stderr)
            return 1
        try:
            mcp = FableMcp(fable, await local_caller(fable, username))
            await mcp.server.run(read_stream, write_stream, mcp.server.create_initialization_options())
        except FableError as e:
            print(f"fable mcp: {e.type}: {e.message}", file=sys.stderr)
            return 1
        finally:
            await fable.close()
    return 0
