"""Per-IP sliding-window rate limits on account endpoints, kept in PostgreSQL."""

from __future__ import annotations

from sqlalchemy import text
from starlette.applications import Starlette
from support.users import PASSWORD
from support.web import BASE, error_of, make_client, signed_in

from fable_core.infra.rate_limits import prune_stale_hits
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app
from fable_web.ratelimit import LIMITS

WRONG = {"username": "alice", "password": "not the password"}


async def test_login_is_limited_per_ip(app: Starlette, alice: Caller) -> None:
    assert (LIMITS["login"].attempts, LIMITS["login"].window_seconds) == (10, 60)
    async with make_client(app, origin=BASE) as c, make_client(app, ip="198.51.100.9", origin=BASE) as other:
        for _ in range(10):
            assert (await c.post("/api/auth/login", json=WRONG)).status_code == 401
        r = await c.post("/api/auth/login", json={"username": "alice", "password": PASSWORD})
        assert r.status_code == 429 and error_of(r)["type"] == "rate_limited"
        assert 1 <= int(r.headers["retry-after"]) <= 61 and "set-cookie" not in r.headers
        assert (await other.post("/api/auth/login", json=WRONG)).status_code == 401   # another IP


async def test_register_limit_and_window_sliding(app: Starlette, fable: Fable, row_counts) -> None:
    assert (LIMITS["register"].attempts, LIMITS["register"].window_seconds) == (5, 300)
    async with make_client(app, origin=BASE) as c:
        for i in range(5):
            r = await c.post("/api/auth/register", json={"username": f"u{i}", "password": PASSWORD})
            assert r.status_code == 201
        before = await row_counts()
        r = await c.post("/api/auth/register", json={"username": "u5", "password": PASSWORD})
        assert r.status_code == 429
        assert await row_counts() == before
        async with fable.db.transaction() as s:   # let the window pass
            await s.execute(text("UPDATE rate_limit_hits SET hit_at = hit_at - interval '301 seconds'"))
        r = await c.post("/api/auth/register", json={"username": "u5", "password": PASSWORD})
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
    """Behind a trusted proxy the client is the address the proxy appended (the rightmost):
    what the client wrote further left must not buy it fresh buckets."""
    async def attempts(app: Starlette, forwarded: list[str]) -> list[int]:
        async with make_client(app, origin=BASE) as c:
            return [(await c.post("/api/auth/reset-password", json={"token": "t", "password": "whatever123"},
                                  headers={"x-forwarded-for": value})).status_code
                    for value in forwarded]

    rotating = [f"192.0.2.{i}, 198.51.100.7" for i in range(11)]   # spoofed left, real client right
    clients = [f"192.0.2.77, 198.51.100.{20 + i}" for i in range(11)]   # the same lie, 11 clients
    trusted = Fable(fable.settings.model_copy(update={"trust_proxy_headers": True}), fable.db)
    assert (await attempts(create_app(trusted), rotating))[-1] == 429    # one client, one bucket
    assert set(await attempts(create_app(trusted), clients)) == {422}   # each client its own bucket
    assert (await attempts(create_app(fable), clients))[-1] == 429      # header ignored: the peer's bucket


async def test_hops_count_trusted_proxies_from_the_right(fable: Fable, alice: Caller) -> None:
    two = Fable(fable.settings.model_copy(update={"trust_proxy_headers": True, "trusted_proxy_hops": 2}),
                fable.db)
    async with make_client(create_app(two), origin=BASE) as c:
        codes = [(await c.post("/api/auth/reset-password", json={"token": "t", "password": "whatever123"},
                               headers={"x-forwarded-for": f"10.9.9.{i}, 198.51.100.7, 10.0.0.2"})).status_code
                 for i in range(11)]
    assert codes[-1] == 429  # the client is 198.51.100.7, whatever it put before it


async def test_wrong_passwords_are_limited_per_account_across_addresses(app: Starlette, alice: Caller) -> None:
    """Guesses spread over many addresses still meet the account's limit; the real user, from
    yet another address, is refused as well (and told when to retry) until it passes."""
    assert (LIMITS["login_account"].attempts, LIMITS["login_account"].window_seconds) == (20, 900)
    for i in range(20):
        async with make_client(app, ip=f"198.51.100.{i}", origin=BASE) as c:
            assert (await c.post("/api/auth/login", json=WRONG)).status_code == 401
    async with make_client(app, ip="203.0.113.200", origin=BASE) as c:
        r = await c.post("/api/auth/login", json={"username": "ALICE", "password": PASSWORD})
        assert r.status_code == 429 and "retry-after" in r.headers


async def test_password_change_is_limited_per_user(app: Starlette, alice: Caller) -> None:
    """Checking the current password is argon2 work: a signed-in user (or a stolen cookie)
    cannot run it in a loop."""
    async with signed_in(app, "alice") as browser:
        codes = [(await browser.post("/api/auth/password", json={
            "current_password": f"guess {i}", "new_password": "whatever new"})).status_code for i in range(6)]
    assert codes == [422] * 5 + [429]


async def test_every_forwarded_for_line_counts(fable: Fable, alice: Caller) -> None:
    """A proxy that adds its own X-Forwarded-For line (rather than extend the client's) must not
    let the client's line, which comes first, decide who the client is."""
    trusted = Fable(fable.settings.model_copy(update={"trust_proxy_headers": True}), fable.db)
    async with make_client(create_app(trusted), origin=BASE) as c:
        codes = [(await c.post("/api/auth/reset-password", json={"token": "t", "password": "whatever123"},
                               headers=[("x-forwarded-for", f"192.0.2.{i}"),  # the client's own line
                                        ("x-forwarded-for", "198.51.100.7")])).status_code  # the proxy's
                 for i in range(11)]
    assert codes[-1] == 429  # one client, one bucket, however it rotates its line


async def test_a_browser_that_signed_in_before_is_not_locked_out_by_strangers(app: Starlette, alice: Caller) -> None:
    """The account-wide limit counts strangers' failures, not the owner's own browser: twenty
    attempts from twenty addresses lock out a new browser for 15 minutes, not the one that signed
    in before (its known-device cookie)."""
    async with make_client(app, ip="203.0.113.9", origin=BASE) as owner:
        first = await owner.post("/api/auth/login", json={"username": "alice", "password": PASSWORD})
        assert first.status_code == 200 and "fable_device" in owner.cookies
        for i in range(19):  # with the owner's first sign-in, the account's 20
            async with make_client(app, ip=f"198.51.100.{i}", origin=BASE) as stranger:
                assert (await stranger.post("/api/auth/login", json=WRONG)).status_code == 401
        again = await owner.post("/api/auth/login", json={"username": "alice", "password": PASSWORD})
        assert again.status_code == 200
        forged = owner.cookies["fable_device"][:-3] + "xyz"
    async with make_client(app, ip="203.0.113.10", origin=BASE) as newcomer:
        newcomer.cookies.set("fable_device", forged, path="/api/auth")
        refused = await newcomer.post("/api/auth/login", json={"username": "alice", "password": PASSWORD})
        assert refused.status_code == 429  # a new (or forged) browser waits like anyone


async def test_hits_no_window_counts_are_pruned(fable: Fable) -> None:
    """A bucket nobody hits again (one of a thousand addresses) does not keep its rows forever."""
    async with fable.db.transaction() as session:
        await session.execute(text(
            "INSERT INTO rate_limit_hits (bucket, hit_at) SELECT 'login:198.51.100.' || i, now() - interval '2 hours' "
            "FROM generate_series(1, 50) i"))
        await session.execute(text("INSERT INTO rate_limit_hits (bucket) VALUES ('login:203.0.113.1')"))
    assert await prune_stale_hits(fable.db) == 50
    async with fable.db.reading() as session:
        left = (await session.execute(text("SELECT bucket FROM rate_limit_hits"))).scalars().all()
    assert left == ["login:203.0.113.1"]
