"""Sliding-window rate limits kept in PostgreSQL, so that a limit holds across replicas.

Hits live in ``rate_limit_hits``. Each check takes a transaction-scoped advisory lock on its
bucket, prunes hits older than the window, counts the rest and records the new attempt, so two
replicas cannot both admit the last allowed attempt. A bucket nobody hits again (one of many
addresses) is pruned by the hourly :func:`fable_core.admin.logs.retention.prune_rate_limits`
job. What is limited (the account endpoints, per address and per account) is in :data:`LIMITS`;
the web surface decides who a client is.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import text

from fable_core.db.database import Database, rowcount
from fable_core.errors import RateLimited

__all__ = ["LIMITS", "Limit", "check_attempts", "count_attempt", "prune_stale_hits"]


@dataclass(frozen=True, slots=True)
class Limit:
    attempts: int
    window_seconds: int


LIMITS: dict[str, Limit] = {
    "login": Limit(10, 60),                    # per address
    "login_account": Limit(20, 900),           # per username tried
    "register": Limit(5, 300),
    "forgot_password": Limit(5, 300),
    "forgot_password_account": Limit(3, 3600),  # mail to one account, whoever asks
    "reset_password": Limit(10, 60),
    "password": Limit(10, 60),                 # password-checking account changes, per address
    "password_account": Limit(5, 300),         # ... per signed-in user
    "verify_email": Limit(10, 60),
    "verification_mail": Limit(3, 3600),       # per signed-in user
    "test_mail": Limit(10, 600),               # an admin's test mails
    "oauth_register": Limit(10, 3600),         # OAuth dynamic client registrations, per address
    "oauth_document": Limit(30, 300),          # client metadata documents Fable fetches, per address
    "unknown_user": Limit(20, 3600),           # names shared with that match no account, per user
}

_LOCK = text("SELECT pg_advisory_xact_lock(hashtext(:bucket))")
_PRUNE = text(
    "DELETE FROM rate_limit_hits WHERE bucket = :bucket AND hit_at <= now() - make_interval(secs => :window)"
)
_COUNT = text(
    "SELECT count(*), extract(epoch FROM min(hit_at) + make_interval(secs => :window) - now()) "
    "FROM rate_limit_hits WHERE bucket = :bucket"
)
_RECORD = text("INSERT INTO rate_limit_hits (bucket) VALUES (:bucket)")


async def check_attempts(db: Database, name: str, key: str) -> None:
    """RateLimited when bucket ``name:key`` is at its limit, recording nothing: for limits that
    count only failures (:func:`count_attempt` after one)."""
    limit = LIMITS[name]
    params = {"bucket": f"{name}:{key}"[:200], "window": limit.window_seconds}
    async with db.reading() as session:
        count, remaining = (await session.execute(_COUNT, params)).one()
    if count >= limit.attempts:
        _refuse(name, limit, remaining)


def _refuse(name: str, limit: Limit, remaining: object) -> None:
    retry = max(1, int(float(remaining or 0)) + 1)  # type: ignore[arg-type]
    raise RateLimited(f"too many {name.removesuffix('_account').replace('_', ' ')} attempts; retry in {retry} s",
                      retry_after=retry, limit=limit.attempts, window_seconds=limit.window_seconds)


async def count_attempt(db: Database, name: str, key: str) -> None:
    """Count one attempt in bucket ``name:key``; RateLimited when it is over the limit."""
    limit = LIMITS[name]
    bucket = f"{name}:{key}"[:200]
    params = {"bucket": bucket, "window": limit.window_seconds}
    async with db.transaction() as session:
        await session.execute(_LOCK, params)  # later statements see every committed hit
        await session.execute(_PRUNE, params)
        count, remaining = (await session.execute(_COUNT, params)).one()
        if count >= limit.attempts:
            _refuse(name, limit, remaining)
        await session.execute(_RECORD, {"bucket": bucket})


async def prune_stale_hits(db: Database) -> int:
    """Delete every hit older than the longest window (no bucket counts it any more); how many."""
    longest = max(limit.window_seconds for limit in LIMITS.values())
    async with db.transaction() as session:
        return rowcount(await session.execute(text(
            "DELETE FROM rate_limit_hits WHERE hit_at <= now() - make_interval(secs => :longest)"),
            {"longest": longest}))
