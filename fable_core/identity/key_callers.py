"""Bearer API keys and OAuth access tokens resolved to callers, remembered for a moment per process.

Every REST and MCP request carries its key. Looking it up costs a query (and, once a minute, the
key's last-used stamp); remembering the answer for :data:`TTL` seconds makes a busy client cost
one hash per request instead. Whatever revokes a credential announces it in its transaction
(:mod:`fable_core.identity.revocations`): every process hears it on commit and forgets what it remembered
(:meth:`KeyCallers.forget`); should a notice be lost, ``TTL`` bounds the staleness. An OAuth access
token (``fat_...``, :mod:`fable_core.identity.oauth.server`) is accepted wherever a key is, with its scope.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time

from fable_core.config import Settings
from fable_core.db.database import Database
from fable_core.identity.accounts import caller_for_key
from fable_core.identity.oauth.server import ACCESS_PREFIX, caller_for_token
from fable_core.identity.revocations import Revocations
from fable_core.tools.caller import Caller, Surface
from fable_core.tools.runtime import Part

__all__ = ["KEY_CALLERS", "TTL", "KeyCallers"]

TTL = 2.0
_MAX_ENTRIES = 10_000


class KeyCallers:
    """One per process (``Fable.keys``), shared by every surface that accepts bearer keys."""

    def __init__(self, db: Database, settings: Settings | None = None, revocations: Revocations | None = None) -> None:
        self._db = db
        self._settings = settings  # None: API keys only
        self._revocations = revocations
        if revocations is not None:
            revocations.on_revoked(self.forget)
        self._known: dict[str, tuple[float, Caller]] = {}
        self._epoch = 0  # one more at each forget: an answer read before it is not remembered

    async def caller(self, key: str, surface: Surface) -> Caller:
        """The caller ``key`` stands for, on ``surface``; Unauthenticated when it is not a key."""
        key = key.strip()
        digest = hashlib.sha256(key.encode()).hexdigest()
        now = time.monotonic()
        cached = self._known.get(digest)
        if cached is not None and cached[0] > now:
            return dataclasses.replace(cached[1], surface=surface)
        epoch = self._epoch
        heard = self._revocations is None or self._revocations.hearing()  # before the read: see below
        async with self._db.transaction() as session:
            if key.startswith(ACCESS_PREFIX) and self._settings is not None:
                caller = await caller_for_token(session, self._settings, key, surface)
            else:
                caller = await caller_for_key(session, key, surface)
        if epoch != self._epoch:  # revoked while we looked: the answer may predate it
            return caller
        if self._revocations is not None:
            self._revocations.watch()  # from the first credential remembered
        if not heard:  # another process's revocation may not reach us yet: remembered once it would
            return caller
        if len(self._known) >= _MAX_ENTRIES:
            self._known.clear()
        self._known[digest] = (now + TTL, caller)
        return caller

    def forget(self) -> None:
        """Drop every remembered key (after a revocation, a password change, a disabled user)."""
        self._epoch += 1
        self._known.clear()


KEY_CALLERS: Part[KeyCallers] = Part("keys")
"""This process's memory of API keys and OAuth tokens (the frame installs it: ``Fable.keys``)."""
