"""Bearer API keys resolved to callers, remembered for a moment per process.

Every REST and MCP request carries its key. Looking it up costs a query (and, once a minute, the
key's last-used stamp); remembering the answer for :data:`TTL` seconds makes a busy client cost
one hash per request instead. Revoking a key or disabling a user clears this process's memory at
once (:meth:`KeyCallers.forget`); other processes follow within ``TTL`` seconds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time

from fable_core.accounts import caller_for_key
from fable_core.caller import Caller, Surface
from fable_core.db.database import Database

__all__ = ["TTL", "KeyCallers"]

TTL = 2.0
_MAX_ENTRIES = 10_000


class KeyCallers:
    """One per process (``Fable.keys``), shared by every surface that accepts bearer keys."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._known: dict[str, tuple[float, Caller]] = {}

    async def caller(self, key: str, surface: Surface) -> Caller:
        """The caller ``key`` stands for, on ``surface``; Unauthenticated when it is not a key."""
        key = key.strip()
        digest = hashlib.sha256(key.encode()).hexdigest()
        now = time.monotonic()
        cached = self._known.get(digest)
        if cached is not None and cached[0] > now:
            return dataclasses.replace(cached[1], surface=surface)
        async with self._db.transaction() as session:
            caller = await caller_for_key(session, key, surface)
        if len(self._known) >= _MAX_ENTRIES:
            self._known.clear()
        self._known[digest] = (now + TTL, caller)
        return caller

    def forget(self) -> None:
        """Drop every remembered key (after a revocation, a password change, a disabled user)."""
        self._known.clear()
