"""Revoked credentials told to every Fable process at once (LISTEN/NOTIFY on :data:`CHANNEL`).

Each process remembers for a couple of seconds who an API key, an OAuth token or a session
cookie stands for (:mod:`fable_core.identity.key_callers`, ``fable_web.auth``). Whatever ends or narrows
a credential (a key or token revoked, an OAuth client disabled, a user disabled, demoted or
deleted, a password changed, a session ended) calls :func:`announce` in its own transaction: the
notice goes out when (and only if) it commits, and every process listening clears what it
remembers. A process starts listening the first time it would remember a credential, and
remembers only answers it read while listening (:meth:`Revocations.hearing`): one read before
then could miss a revocation another process makes meanwhile, for the whole TTL (a replica
under load took longer to start listening than a revocation took to follow). A notice lost
while a listener reconnects leaves the remembered answers to their TTL, which stays the bound,
and each (re)connect clears everything as if a notice had come.

The process that commits the change forgets at once, as the transaction commits (the notice
comes back to it a moment later): a disabled account's next request here is refused whatever
surface disabled it, and no surface has to remember to forget.

One listener per database in a process (:meth:`Revocations.of`), whatever the number of
runtimes on it; what it calls is held weakly, so a surface gone is not kept alive by it.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import ClassVar

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.database import Database
from fable_core.db.listener import Listener

__all__ = ["CHANNEL", "Revocations", "announce"]

CHANNEL = "fable_revoked"


async def announce(session: AsyncSession, what: str) -> None:
    """Tell every process, when ``session``'s transaction commits, that credentials changed
    (``what``: what happened, for whoever reads the channel)."""
    await session.execute(select(func.pg_notify(CHANNEL, what[:200])))
    session.info[_ANNOUNCED] = True


_ANNOUNCED = "fable_revoked"  # a session's info key: it announced, so its commit forgets here too


class Revocations:
    """Calls each ``forget`` on every notice heard (and on each (re)connect)."""

    _of: ClassVar[weakref.WeakKeyDictionary[Database, Revocations]] = weakref.WeakKeyDictionary()

    def __init__(self, url: str) -> None:
        self._forgetters: list[weakref.WeakMethod[Callable[[], None]]] = []
        self._listener = Listener(url, {CHANNEL: self._heard})
        self._closed = False
        self.heard = 0  # notices (and reconnects) handled, for tests and the curious

    @classmethod
    def of(cls, db: Database) -> Revocations:
        """The one for ``db`` in this process (every runtime on it shares its listener)."""
        found = cls._of.get(db)
        if found is None:
            found = cls._of[db] = cls(db.url)
            db.on_commit.append(found._committed)
        return found

    def _committed(self, session: AsyncSession) -> None:
        """A transaction of this process committed: if it announced, forget here now."""
        if session.info.pop(_ANNOUNCED, False):
            self._forget()

    def on_revoked(self, forget: Callable[[], None]) -> None:
        """Call ``forget`` (a bound method, held weakly) on every notice."""
        self._forgetters.append(weakref.WeakMethod(forget))

    def watch(self) -> None:
        """Listen from now on (idempotent; called by whoever is about to remember a credential)."""
        if not self._closed:
            self._listener.start()

    def hearing(self) -> bool:
        """Whether a notice committed from now on reaches this process (the LISTEN is in place);
        what is read before it may not be remembered."""
        return self._listener.listening.is_set()

    async def ready(self) -> None:
        """Until the LISTEN is in place (tests)."""
        self.watch()
        await self._listener.listening.wait()

    def _heard(self, _what: str | None) -> None:
        self.heard += 1
        self._forget()

    def _forget(self) -> None:
        alive = []
        for ref in self._forgetters:
            forget = ref()
            if forget is not None:
                forget()
                alive.append(ref)
        self._forgetters = alive

    async def close(self) -> None:
        self._closed = True
        await self._listener.close()
