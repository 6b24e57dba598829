"""Per-IP sliding-window rate limits on account endpoints, kept in PostgreSQL."""

from __future__ import annotations

from sqlalchemy import text
from starlette.applications import Starlette
from web_helpers import BASE, error_of, make_client

from fable_core.caller import Caller
from fable_core.runtime import Fable
from fable_web.app import create_app
from fable_web.ratelimit import LIMITS

WRONG = {"username": "alice", "password": "not the password"}


async def test_login_is_limited_per_ip(app: Starlette, alice: Caller) -> None:
    assert (LIMITS["login"].attempts, LIMITS["login"].window_seconds) == (10, 60)
    async with make_client(app, origin=BASE) as c, make_client(app, ip="198.51.100.9", origin=BASE) as other:
        for _ in range(10):
            assert (await c.post("/api/auth/login", json=WRONG)).status_code == 401
        r = await c.post("/api/auth/login", json={"username": "alice", "password": "correct horse battery"})
        assert r.status_code == 429 and error_of(r)["type"] == "rate_limited"
        assert 1 <= int(r.headers["retry-after"]) <= 61 and "set-cookie" not in r.headers
        assert (await other.post("/api/auth/login", json=WRONG)).status_code == 401   # another IP


async def test_register_limit_and_window_sliding(app: Starlette, fable: Fable, row_counts) -> None:
    assert (LIMITS["register"].attempts, LIMITS["register"].window_seconds) == (5, 300)
    async with make_client(app, origin=BASE) as c:
        for i in range(5):
            r = await c.post("/api/auth/register", json={"username": f"u{i}", "password": "correct horse battery"})
            assert r.status_code == 201
        before = await row_counts()
        r = await c.post("/api/auth/register", json={"username": "u5", "password": "correct horse battery"})
        assert r.status_code == 429
        assert await row_counts() == before
        async with fable.db.transaction() as s:   # let the window pass
            await s.execute(text("UPDATE rate_limit_hits SET hit_at = hit_at - interval '301 seconds'"))
        r = await c.post("/api/auth/register", json={"username": "u5", "password": "correct horse battery"})
        assert r.status_code == 201


async def test_limits_hold_across_replicas(fable: Fable, alice: Caller) -> None:
    """Two apps (as two processes would) over one database share the count."""
    one, two = create_app(fable), create_app(Fable(fable.settings, fable.db))
    async with make_client(one, origin=BASE) as a, make_client(two, origin=BASE) as b:
        for i in range(5):
            assert (await a.post("/api/auth/forgot-password", json={"username": f"x{i}"})).status_code == 503
        r = await b.post("/api/auth/forgot-password", json={"username": "x"})
        assert r.status_code == 429


async def test_proxy_headers_only_when_trusted(fable: Fable, alice: Caller) -> None:
    async def attempts(app: Starlette, forwarded: list[str]) -> list[int]:
        async with make_client(app, origin=BASE) as c:
            return [(await c.post("/api/auth/reset-password", json={"token": "t", "password": "whatever123"},
                                  headers={"x-forwarded-for": f"{ip}, 10.0.0.1"})).status_code
                    for ip in forwarded]

    ips = [f"192.0.2.{i}" for i in range(11)]
    trusted = Fable(fable.settings.model_copy(update={"trust_proxy_headers": True}), fable.db)
    assert set(await attempts(create_app(trusted), ips)) == {422}   # each client its own bucket
    assert (await attempts(create_app(fable), ips))[-1] == 429      # header ignored: one bucket
