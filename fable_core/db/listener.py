"""One connection LISTENing on PostgreSQL channels, held open and opened again after a loss.

A NOTIFY sent inside a transaction is delivered when (and only if) it commits, to every session
listening on its channel, in every process: the cheapest way for one Fable process to wake
another (or itself) after a commit. The connection is its own, outside the pool (the pool's
size is how many tool calls run at once, and this one is never free). After every (re)connect
each handler is called once with ``None``: notices sent while nobody listened are lost, so a
handler looks at the database then.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from fable_core.db.errors import log_once

__all__ = ["Handler", "Listener"]

Handler = Callable[[str | None], None]
_RETRY_SECONDS = 1.0
_log = logging.getLogger(__name__)


class Listener:
    """Calls ``handlers[channel](payload)`` for each notice on its channels, in this loop."""

    def __init__(self, url: str, handlers: Mapping[str, Handler]) -> None:
        self._url = url
        self._handlers = dict(handlers)
        self._task: asyncio.Task[None] | None = None
        self.listening = asyncio.Event()  # set while the LISTEN is in place

    def start(self) -> None:
        if self._task is None and self._handlers:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="fable-listener")

    async def _run(self) -> None:
        while True:
            try:
                await self._listen()
            except (DBAPIError, OSError) as e:  # the server away: one line a minute while it is, then listen again
                log_once(_log, logging.WARNING, f"listening on {sorted(self._handlers)} failed "
                         f"({type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}); retrying")
            except Exception:  # noqa: BLE001 - asyncpg's own or anything else: listen again
                _log.warning("listening on %s failed; retrying", sorted(self._handlers), exc_info=True)
            await asyncio.sleep(_RETRY_SECONDS)

    async def _listen(self) -> None:
        engine = create_async_engine(self._url, poolclass=NullPool)
        lost = asyncio.Event()
        try:
            async with engine.connect() as conn:
                raw: Any = (await conn.get_raw_connection()).driver_connection
                raw.add_termination_listener(lambda _: lost.set())
                for channel in self._handlers:
                    await raw.add_listener(channel, self._deliver)
                self.listening.set()
                try:
                    for handler in self._handlers.values():
                        self._call(handler, None)
                    await lost.wait()
                finally:
                    self.listening.clear()
        finally:
            await engine.dispose()

    def _deliver(self, *args: Any) -> None:
        channel, payload = args[-2], args[-1]  # asyncpg: (connection, pid, channel, payload)
        handler = self._handlers.get(channel)
        if handler is not None:
            self._call(handler, payload)

    @staticmethod
    def _call(handler: Handler, payload: str | None) -> None:
        try:
            handler(payload)
        except Exception:  # noqa: BLE001 - one failing handler must not end the listening
            _log.exception("handling a notice failed")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
