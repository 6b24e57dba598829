"""``fable mcp``: MCP over stdin/stdout for a local user (Claude Desktop and other hosts).

Only protocol goes to stdout: fd 1 points at stderr while the database opens (so even the
embedded PostgreSQL's output cannot reach the wire), and the SDK diverts it again while it
serves, writing protocol through a private copy. Logs go to stderr. The user is ``--user``, else the only user; an empty database
gets its first user (named after ``$USER``), so a fresh install works with no setup.
"""

from __future__ import annotations

import getpass
import logging
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

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


@contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Point fd 1 at stderr while starting up, so nothing (not even a child process) can write
    to the wire before the protocol owns it."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


async def _start(username: str | None) -> tuple[Fable, Caller]:
    fable = await Fable.open(load_settings())
    try:
        return fable, await local_caller(fable, username)
    except BaseException:
        await fable.close()
        raise


async def run_stdio(username: str | None = None) -> int:
    """Serve MCP on stdin/stdout until the client closes stdin; 1 if startup fails.

    Startup (database, user) happens before stdin is read, so a failure exits at once with
    its reason on stderr instead of leaving the client waiting.
    """
    _configure_logging(load_settings().fable_log_level)
    try:
        with _stdout_to_stderr():
            fable, caller = await _start(username)
    except FableError as e:
        print(f"fable mcp: {e.type}: {e.message}", file=sys.stderr)
        return 1
    try:
        mcp = FableMcp(fable, caller)
        async with stdio_server() as (read_stream, write_stream):
            await mcp.server.run(read_stream, write_stream, mcp.server.create_initialization_options())
    finally:
        await fable.close()
    return 0
