"""``fable mcp``: MCP over stdin/stdout for a local user (Claude Desktop and other hosts).

Only protocol goes to stdout: fd 1 points at stderr while the database opens (so even the
embedded PostgreSQL's output cannot reach the wire), and the SDK diverts it again while it
serves, writing protocol through a private copy. Logs go to stderr. The user is ``--user``,
else the only user; an empty database gets its first user (named after ``$USER``).

Startup is what a desktop client waits for, so its two slow parts overlap: the database (the
embedded server starting, migrations checked) opens in the background while the MCP SDK is
imported. Hence the imports inside :func:`run_stdio`.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from fable_core.config import Settings, load_settings
from fable_core.errors import FableError

if TYPE_CHECKING:
    from fable_core.runtime import Fable
    from fable_core.tools.caller import Caller

__all__ = ["SignalExit", "run_stdio"]

_log = logging.getLogger(__name__)


def _configure_logging(level: str) -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="fable mcp: %(levelname)s %(name)s: %(message)s")
    logging.getLogger("fable_mcp").setLevel(level.upper())


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


class SignalExit:
    """While serving on stdio, make SIGTERM and SIGINT (how hosts stop a server) end the process
    at once: ``cleanup``, then the exit handlers (the embedded PostgreSQL is released by its
    last user), then exit with 128 + the signal.

    Unwinding, as the CLI otherwise does, cannot work here: the SDK reads stdin in a worker
    thread that no cancellation stops, so the process would wait for the client's next line.
    Once a signal came, the exit owns the shutdown: the serving code awaits :meth:`settled`
    before closing anything itself (a host often closes stdin right after signalling).
    """

    def __init__(self, cleanup: Callable[[], Awaitable[None]] | None = None) -> None:
        self.cleanup = cleanup
        self.leaving: asyncio.Task[None] | None = None
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self._on_signal, signum)

    def _on_signal(self, signum: int) -> None:
        if self.leaving is None:
            self.leaving = asyncio.ensure_future(self._leave(signum))

    async def _leave(self, signum: int) -> None:
        try:
            if self.cleanup is not None:
                await asyncio.wait_for(self.cleanup(), timeout=5)
        except Exception:  # noqa: BLE001 - leaving anyway: the exit handlers must still run
            _log.warning("cleanup on signal %d failed", signum, exc_info=True)
        finally:
            atexit._run_exitfuncs()
            sys.stderr.flush()
            os._exit(128 + signum)

    async def settled(self) -> None:
        """Return at once unless a signal came; then wait for the exit (which never returns)."""
        if self.leaving is not None:
            await self.leaving


async def _start(settings: Settings, username: str | None) -> tuple[Fable, Caller]:
    from fable_core.runtime import Fable
    from fable_mcp.local_user import local_caller

    fable = await Fable.open(settings)
    try:
        return fable, await local_caller(fable, username)
    except BaseException:
        await fable.close()
        raise


async def run_stdio(username: str | None = None, toolsets: list[str] | None = None) -> int:
    """Serve MCP on stdin/stdout until the client closes stdin; 1 if startup fails.

    Startup (database, user) finishes before stdin is read, so a failure exits at once with
    its reason on stderr instead of leaving the client waiting.
    """
    settings = load_settings()
    _configure_logging(settings.fable_log_level)
    try:
        with _stdout_to_stderr():
            opening = asyncio.create_task(_start(settings, username))
            await asyncio.sleep(0)  # runs until the database is being opened in the background
            from mcp.server.stdio import stdio_server

            from fable_mcp.server import FableMcp

            fable, caller = await opening
            try:
                mcp = FableMcp(fable, caller, toolsets)
            except BaseException:
                await fable.close()
                raise
    except FableError as e:
        print(f"fable mcp: {e.type}: {e.message}", file=sys.stderr)
        return 1
    exits = SignalExit(fable.close)
    try:
        async with stdio_server() as (read_stream, write_stream):
            await mcp.server.run(read_stream, write_stream, mcp.server.create_initialization_options())
    finally:
        await exits.settled()
        await fable.close()
    return 0
