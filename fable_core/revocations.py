"""Revoked credentials told to every Fable process at once (LISTEN/NOTIFY on :data:`CHANNEL`).

Each process remembers for a couple of seconds who an API key, an OAuth token or a session
cookie stands for (:mod:`fable_core.key_callers`, ``fable_web.auth``). Whatever ends or narrows
a credential (a key or token revoked, an OAuth client disabled, a user disabled, demoted or
deleted, a password changed, a session ended) calls :func:`announce` in its own transaction: the
notice goes out when (and only if) it commits, and every process listening clears what it
remembers. A process starts listening the first time it remembers a credential; a notice lost
(a listener reconnecting, or not listening yet) leaves the remembered answers to their TTL,
which stays the bound, and each (re)connect clears everything as if a notice had come.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.listener import Listener

__all__ = ["CHANNEL", "Revocations", "announce"]

CHANNEL = "fable_revoked"


async def announce(session: AsyncSession, what: str) -> None:
    """Tell every process, when ``session``'s transaction commits, that credentials changed
    (``what``: what happened, for whoever reads the channel)."""
    await session.execute(select(func.pg_notify(CHANNEL, what[:200])))


class Revocations:
    """One per :class:`~fable_core.runtime.Fable`: calls each ``forget`` on every notice heard."""

    def __init__(self, url: str) -> None:
        self._forgetters: list[Callable[[], None]] = []
        self._listener = Listener(url, {CHANNEL: self._heard})
        self._closed = False
        self.heard = 0  # notices (and reconnects) handled, for tests and the curious

    @property
    def listening(self) -> bool:
        return self._listener.listening.is_set()

    def on_revoked(self, forget: Callable[[], None]) -> None:
        self._forgetters.append(forget)

    def watch(self) -> None:
        """Listen from now on (idempotent; called by whoever is about to remember a credential)."""
        if not self._closed:
            self._listener.start()

    async def ready(self) -> None:
        """Until the LISTEN is in place (tests)."""
        self.watch()
        await self._listener.listening.wait()

    def _heard(self, _what: str | None) -> None:
        self.heard += 1
        for forget in self._forgetters:
            forget()

    async def close(self) -> None:
        self._closed = True
        await self._listener.close()
