"""Per-IP sliding-window rate limits on the account endpoints, kept in PostgreSQL.

Hits live in the ``rate_limit_hits`` table, so a limit holds across replicas (no correctness
depends on process memory). Each check takes a transaction-scoped advisory lock on its bucket,
prunes hits older than the window, counts the rest and records the new attempt, so two
replicas cannot both admit the last allowed attempt.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import text
from starlette.requests import Request

from fable_core.db.database import Database
from fable_core.errors import RateLimited

__all__ = ["LIMITS", "Limit", "RateLimiter", "client_ip"]


@dataclass(frozen=True, slots=True)
class Limit:
    attempts: int
    window_seconds: int


LIMITS: dict[str, Limit] = {
    "login": Limit(10, 60),
    "register": Limit(5, 300),
    "forgot_password": Limit(5, 300),
    "reset_password": Limit(10, 60),
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


def client_ip(request: Request, trust_proxy_headers: bool) -> str:
    """The client's address; behind a trusted proxy, the one it reports."""
    if trust_proxy_headers:
        forwarded = request.headers.get("x-forwarded-for")
        if forwarded and forwarded.split(",")[0].strip():
            return forwarded.split(",")[0].strip()
        real = request.headers.get("x-real-ip", "").strip()
        if real:
            return real
    return request.client.host if request.client else "unknown"


class RateLimiter:
    def __init__(self, db: Database, *, trust_proxy_headers: bool) -> None:
        self.db = db
        self.trust_proxy_headers = trust_proxy_headers

    async def hit(self, request: Request, name: str) -> None:
        """Count one attempt at ``name`` from this client; RateLimited when over the limit."""
        limit = LIMITS[name]
        bucket = f"{name}:{client_ip(request, self.trust_proxy_headers)}"
        params = {"bucket": bucket, "window": limit.window_seconds}
        async with self.db.transaction() as session:
            await session.execute(_LOCK, params)  # later statements see every committed hit
            await session.execute(_PRUNE, params)
            count, remaining = (await session.execute(_COUNT, params)).one()
            if count >= limit.attempts:
                retry = max(1, int(float(remaining or 0)) + 1)
                raise RateLimited(
                    f"too many {name.replace('_', ' ')} attempts; retry in {retry} s",
                    retry_after=retry,
                    limit=limit.attempts,
                    window_seconds=limit.window_seconds,
                )
            await session.execute(_RECORD, {"bucket": bucket})
