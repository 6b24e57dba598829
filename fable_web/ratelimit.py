"""Rate limits on the account endpoints: who the client is, and which buckets an attempt counts
in (:mod:`fable_core.infra.rate_limits` keeps the counts).

Each limit is counted per client address and, where an account is named or signed in, per
account too: a botnet spreading password guesses over many addresses still meets the
account's limit, and one address cannot spend another's.

The client address is the connection's peer, unless ``TRUST_PROXY_HEADERS`` is set: then it is
taken from ``X-Forwarded-For`` *from the right*, ``TRUSTED_PROXY_HOPS`` entries in (each proxy
appends the address it saw; entries further left are whatever the client sent, and rotating them
must not buy new buckets). Every ``X-Forwarded-For`` line counts, joined in order: a proxy may add
its own line rather than extend the client's, and reading the first line alone let the client's
own line decide.
"""

from __future__ import annotations

from starlette.requests import Request

from fable_core.db.database import Database
from fable_core.infra.rate_limits import LIMITS, count_attempt

__all__ = ["LIMITS", "RateLimiter", "client_ip"]


def client_ip(request: Request, trust_proxy_headers: bool, hops: int = 1) -> str:
    """The client's address; behind ``hops`` trusted proxies, the one the outermost saw."""
    if trust_proxy_headers:
        lines = request.headers.getlist("x-forwarded-for")
        forwarded = [part.strip() for part in ",".join(lines).split(",") if part.strip()]
        if len(forwarded) >= hops:  # fewer than the proxies add: not from them, so not trusted
            return forwarded[-hops]
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
        await count_attempt(self.db, name, key)
