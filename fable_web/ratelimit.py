"""Sliding-window rate limits on the account endpoints, kept in PostgreSQL.

Each limit is counted per client address and, where an account is named or signed in, per
account too: a botnet spreading password guesses over many addresses still meets the
account's limit, and one address cannot spend another's. Hits live in ``rate_limit_hits``, so
a limit holds across replicas (no correctness depends on process memory). Each check takes a
transaction-scoped advisory lock on its bucket, prunes hits older than the window, counts the
rest and records the new attempt, so two replicas cannot both admit the last allowed attempt.

The client address is the connection's peer, unless ``TRUST_PROXY_HEADERS`` is set: then it is
taken from ``X-Forwarded-For`` *from the right*, :data:`TRUSTED_PROXY_HOPS` entries in (each
proxy appends the address it saw; entries further left are whatever the client sent, and
rotating them must not buy new buckets).
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


def client_ip(request: Request, trust_proxy_headers: bool, hops: int = 1) -> str:
    """The client's address; behind ``hops`` trusted proxies, the one the outermost saw."""
    if trust_proxy_headers:
        forwarded = [part.strip() for part in request.headers.get("x-forwarded-for", "").split(",")]
        forwarded = [part for part in forwarded if part]
        if forwarded:
            return forwarded[-hops] if len(forwarded) >= hops else forwarded[0]
    return request.client.host if request.client else "unknown"


class RateLimiter:
    def __init__(self, db: Database, *, trust_proxy_headers: bool, hops: int = 1) -> None:
        self.db = db
        self.trust_proxy_headers = trust_proxy_headers
        self.hops = hops

    def ip(self, request: Request) -> str:
        return client_ip(request, self.trust_proxy_headers, self.hops)

    async def hit(self, request: Request, name: str, *, account: str | int | None = None) -> None:
        """Count one attempt at ``name`` from this client (and, with ``account``, at
        ``name_account`` for it); RateLimited when either is over its limit."""
        await self.count(name, self.ip(request))
        if account is not None:
            await self.count(f"{name}_account", str(account).lower())

    async def count(self, name: str, key: str) -> None:
        """Count one attempt in bucket ``name:key``; RateLimited when it is over the limit."""
        limit = LIMITS[name]
        bucket = f"{name}:{key}"[:200]
        params = {"bucket": bucket, "window": limit.window_seconds}
        async with self.db.transaction() as session:
            await session.execute(_LOCK, params)  # later statements see every committed hit
            await session.execute(_PRUNE, params)
            count, remaining = (await session.execute(_COUNT, params)).one()
            if count >= limit.attempts:
                retry = max(1, int(float(remaining or 0)) + 1)
                raise RateLimited(
                    f"too many {name.removesuffix('_account').replace('_', ' ')} attempts; retry in {retry} s",
                    retry_after=retry,
                    limit=limit.attempts,
                    window_seconds=limit.window_seconds,
                )
            await session.execute(_RECORD, {"bucket": bucket})
