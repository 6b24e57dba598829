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
without a result) in the transaction of its first write phase, and given its result as it
finishes: a repeat while it runs is refused (409, "still running"), one after it answers its
result; a failure before its first write leaves no claim (a repeat runs it), and one after a
committed write phase (or a crash then) leaves the claim: its repeats are refused, saying so,
since running it again could do that part twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from fable_core.errors import Conflict, InvalidInput, Unavailable
from fable_core.tools.access import owner_sql

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
PATIENCE = 60.0  # seconds a finished call in phases waits for the database to keep its result
_KEY = re.compile(r"[\x21-\x7e]{1,200}")

_MINE = owner_sql("idempotent_calls", "user_id")  # keys are their caller's own
_KEPT = text(f"SELECT tool, fingerprint, result FROM idempotent_calls WHERE {_MINE} AND key = :key")
_KEEP = text("""
INSERT INTO idempotent_calls (user_id, key, tool, fingerprint, result)
VALUES (:user_id, :key, :tool, :fingerprint, CAST(:result AS jsonb))
ON CONFLICT (user_id, key) DO NOTHING RETURNING 1
""")
# A call in phases claims its key in its first write phase (a row without a result), and keeps
# its result as it finishes (or as the first write, when it wrote nothing).
_CLAIM = text("""
INSERT INTO idempotent_calls (user_id, key, tool, fingerprint, result)
VALUES (:user_id, :key, :tool, :fingerprint, NULL)
ON CONFLICT (user_id, key) DO NOTHING RETURNING 1
""")
_FINISH = text("""
INSERT INTO idempotent_calls (user_id, key, tool, fingerprint, result)
VALUES (:user_id, :key, :tool, :fingerprint, CAST(:result AS jsonb))
ON CONFLICT (user_id, key) DO UPDATE SET result = excluded.result
WHERE idempotent_calls.result IS NULL AND idempotent_calls.fingerprint = excluded.fingerprint
""")
_PRUNE = text("DELETE FROM idempotent_calls WHERE created_at < now() - make_interval(secs => :secs)")


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
        raise Conflict(f"a call with idempotency key {key!r} is still running, or stopped part-way (see what it "
                       "did): send it again in a moment for its result, or use a new key; nothing was done")
    return row.result


async def keep(session: AsyncSession, user_id: int, key: str, tool: str, print_: str, result: Any) -> bool:
    """Keep ``result`` for ``key`` in ``session``'s transaction; False when another call kept
    the key first (this one must roll back and answer that one's result)."""
    params = {"user_id": user_id, "key": key, "tool": tool, "fingerprint": print_, "result": _json(result)}
    return (await session.execute(_KEEP, params)).first() is not None


async def claim(session: AsyncSession, user_id: int, key: str, tool: str, print_: str) -> bool:
    """Claim ``key`` in the first write phase of a call that runs in phases (the claim commits or
    rolls back with that phase's writes); False when another call kept or claimed it."""
    params = {"user_id": user_id, "key": key, "tool": tool, "fingerprint": print_}
    return (await session.execute(_CLAIM, params)).first() is not None


async def finish(db: Database, user_id: int, key: str, tool: str, print_: str, result: Any) -> None:
    """Keep a finished call-in-phases' result under its key: patiently (the call's writes are
    done; its answer must be kept for its repeats, though the database blinks), up to
    :data:`PATIENCE` seconds, then Unavailable."""
    params = {"user_id": user_id, "key": key, "tool": tool, "fingerprint": print_, "result": _json(result)}
    loop = asyncio.get_running_loop()
    deadline, pause = loop.time() + PATIENCE, 0.25
    while True:
        try:
            async with db.transaction() as session:
                await session.execute(_FINISH, params)
        except Unavailable:
            if loop.time() + pause > deadline:
                raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, 2.0)
        else:
            return


def _json(result: Any) -> str:
    return json.dumps(result, separators=(",", ":"))


async def forget_old_keys(db: Database) -> None:
    """Forget idempotency keys older than :data:`KEEP` (the hourly job
    :func:`~fable_core.admin.logs.retention.prune_idempotent_calls`)."""
    async with db.transaction() as session:
        await session.execute(_PRUNE, {"secs": KEEP.total_seconds()})
