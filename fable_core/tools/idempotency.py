"""Idempotency keys: a write sent again with the same key returns its first answer and writes nothing.

A client whose connection broke mid-call cannot know whether the call committed (of 16 calls cut
by a ``kill -9``, 4 had): sent again, ``log_work`` or an append would count twice. With a key
(REST: the ``Idempotency-Key`` header; MCP: ``_meta.idempotencyKey``), the dispatcher stores the
call's result in ``idempotent_calls`` **in the call's own transaction**: the key is kept exactly
when the writes are. A call with a key already kept (by any replica: it is PostgreSQL's) returns
the kept result without running; the same key with other arguments, or for another tool, is
refused (422), nothing done. Two calls with one key at once: the second's row waits on the
first's, and when the first commits the second rolls back and answers the first's result.

Keys are the caller's own (per user), 1–200 visible ASCII characters, kept :data:`KEEP` (48 h,
at least the promised 24) by the hourly
:func:`~fable_core.admin.logs.retention.prune_idempotent_calls`. Read tools ignore keys
(a read repeated writes nothing anyway), and streams take none. A tool that waits on a model or
a remote site (``transaction="phases"``) commits phase by phase, so its key is claimed (a row
without a result, committed) before it runs and given its result as it finishes: a repeat while
it runs is refused (409, "still running"), one after it answers its result; a failure gives the
claim up (a repeat runs it), and a claim a crash left holds :data:`RUNNING` (10 minutes).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from fable_core.errors import Conflict, InvalidInput

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from fable_core.db.database import Database

__all__ = [
    "HEADER",
    "KEEP",
    "META_KEY",
    "Replayed",
    "check_key",
    "claim",
    "fingerprint",
    "finish",
    "forget_old_keys",
    "keep",
    "kept",
]

HEADER = "Idempotency-Key"
META_KEY = "idempotencyKey"
KEEP = timedelta(hours=48)
_KEY = re.compile(r"[\x21-\x7e]{1,200}")

_KEPT = text("SELECT tool, fingerprint, result FROM idempotent_calls WHERE user_id = :user_id AND key = :key")
_KEEP = text("""
INSERT INTO idempotent_calls (user_id, key, tool, fingerprint, result)
VALUES (:user_id, :key, :tool, :fingerprint, CAST(:result AS jsonb))
ON CONFLICT (user_id, key) DO NOTHING RETURNING 1
""")
# A phases call's claim: its row without a result while it runs; one a crash left is taken over
# after RUNNING by a repeat of the same call.
_CLAIM = text("""
INSERT INTO idempotent_calls (user_id, key, tool, fingerprint, result)
VALUES (:user_id, :key, :tool, :fingerprint, NULL)
ON CONFLICT (user_id, key) DO UPDATE SET created_at = now()
WHERE idempotent_calls.result IS NULL AND idempotent_calls.fingerprint = excluded.fingerprint
  AND idempotent_calls.tool = excluded.tool AND idempotent_calls.created_at < now() - make_interval(secs => :running)
RETURNING 1
""")
_FINISH = text("UPDATE idempotent_calls SET result = CAST(:result AS jsonb) "
               "WHERE user_id = :user_id AND key = :key AND result IS NULL")
_GIVE_UP = text("DELETE FROM idempotent_calls WHERE user_id = :user_id AND key = :key AND result IS NULL")
_PRUNE = text("DELETE FROM idempotent_calls WHERE created_at < now() - make_interval(secs => :secs)")
RUNNING = timedelta(minutes=10)  # how long a phases call's claim holds without its result (a crash's)


class Replayed(Exception):
    """Raised inside a call's transaction to roll it back: its key was kept meanwhile by another."""


def check_key(raw: object) -> str:
    """The key as given, or InvalidInput saying what one is."""
    if not isinstance(raw, str) or _KEY.fullmatch(raw) is None:
        shown = repr(raw)[:60]
        raise InvalidInput(f"idempotency key {shown} is not 1-200 visible ASCII characters (no spaces)",
                           field="idempotency_key")
    return raw


def fingerprint(tool: str, arguments: Mapping[str, Any] | None) -> str:
    """What a repeat must match: the tool and its arguments as sent (JSON, keys sorted)."""
    canonical = json.dumps({"tool": tool, "arguments": dict(arguments or {})}, sort_keys=True, default=str,
                           separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


async def kept(session: AsyncSession, user_id: int, key: str, tool: str, print_: str) -> Any:
    """The result kept for ``key`` (None when there is none); InvalidInput when the key was kept
    for another call, Conflict while the call that claimed it still runs."""
    row = (await session.execute(_KEPT, {"user_id": user_id, "key": key})).first()
    if row is None:
        return None
    if (row.tool, row.fingerprint) != (tool, print_):
        raise InvalidInput(f"idempotency key {key!r} was used for another call ({row.tool}, other arguments): "
                           "use a new key for a new call; nothing was done", field="idempotency_key")
    if row.result is None:
        raise Conflict(f"a call with idempotency key {key!r} is still running: send it again in a moment "
                       "for its result; nothing was done")
    return row.result


async def keep(session: AsyncSession, user_id: int, key: str, tool: str, print_: str, result: Any) -> bool:
    """Keep ``result`` for ``key`` in ``session``'s transaction; False when another call kept
    the key first (this one must roll back and answer that one's result)."""
    params = {"user_id": user_id, "key": key, "tool": tool, "fingerprint": print_, "result": _json(result)}
    return (await session.execute(_KEEP, params)).first() is not None


async def claim(session: AsyncSession, user_id: int, key: str, tool: str, print_: str) -> bool:
    """Claim ``key`` for a call that runs in phases (committed now, before it runs); False when
    it is kept or claimed already (:func:`kept` then says what to answer)."""
    params = {"user_id": user_id, "key": key, "tool": tool, "fingerprint": print_,
              "running": RUNNING.total_seconds()}
    return (await session.execute(_CLAIM, params)).first() is not None


async def finish(session: AsyncSession, user_id: int, key: str, result: Any | None) -> None:
    """A claimed call's end: its result kept, or (None: it failed) its claim given up, so that
    sending it again runs it."""
    if result is None:
        await session.execute(_GIVE_UP, {"user_id": user_id, "key": key})
    else:
        await session.execute(_FINISH, {"user_id": user_id, "key": key, "result": _json(result)})


def _json(result: Any) -> str:
    return json.dumps(result, separators=(",", ":"))


async def forget_old_keys(db: Database) -> None:
    """Forget idempotency keys older than :data:`KEEP` (the hourly job
    :func:`~fable_core.admin.logs.retention.prune_idempotent_calls`)."""
    async with db.transaction() as session:
        await session.execute(_PRUNE, {"secs": KEEP.total_seconds()})
