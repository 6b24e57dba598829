"""Password hashing never holds a database connection: a flood of sign-ins, sign-ups and resets
cannot take the pool from everyone else.

Security round 3: ``authenticate`` checked the password (a tenth of a second of argon2, in a pool
of one thread) inside a transaction, so thirty clients on distinct addresses left twenty
connections idle in transaction and another user's reads took 3.8 s instead of 15 ms. Here the
flood runs while a watcher counts the connections idle in a transaction, and someone else reads.
"""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool
from starlette.applications import Starlette
from support.users import PASSWORD
from support.web import BASE, make_client

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

pytestmark = pytest.mark.usefixtures("real_argon2")  # the flood is of real hashes, a tenth of a second each

# Transactions that read or lock an account and then sit idle for a fifth of a second: what a
# password check inside the transaction looked like (each waited its turn at the hasher, a tenth of
# a second per password before it, holding its connection). Other transactions of the flood (the
# rate limiter's) are left out: they may wait for the event loop among forty requests.
HELD = text("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND state = 'idle in transaction' AND query ILIKE '%users%' "
            "AND clock_timestamp() - state_change > interval '0.2 seconds'")


async def test_a_flood_of_password_checks_holds_no_connection(app: Starlette, fable: Fable, alice: Caller,
                                                              bob: Caller) -> None:
    stop = asyncio.Event()
    seen: list[int] = []
    # autocommit: pg_stat_activity is read once per transaction (a snapshot), and must be read anew
    watcher_engine = create_async_engine(fable.db.url, poolclass=NullPool, isolation_level="AUTOCOMMIT")

    async def watch() -> None:
        async with watcher_engine.connect() as conn:
            while not stop.is_set():
                seen.append(int((await conn.execute(HELD)).scalar_one()))
                await asyncio.sleep(0.005)

    async def attempt(i: int) -> int:
        async with make_client(app, ip=f"198.51.100.{i}", origin=BASE) as c:
            while True:  # refused as busy (fable_web.shed: nothing done), it is sent again, as the UI does
                if i % 8 == 0:
                    body = {"username": f"newcomer{i}", "password": "a long enough password"}
                    response = await c.post("/api/auth/register", json=body)
                else:
                    who = "alice" if i % 4 == 1 else f"nobody{i}"
                    response = await c.post("/api/auth/login", json={"username": who, "password": "not it"})
                if response.status_code != 503:
                    return response.status_code
                assert response.json()["error"]["type"] == "busy"
                await asyncio.sleep(0.05)

    watcher = asyncio.create_task(watch())
    try:
        codes = await asyncio.gather(*(attempt(i) for i in range(40)))
        async with make_client(app, ip="203.0.113.50", origin=BASE) as c:  # bob, meanwhile: in at once
            assert (await c.post("/api/auth/login", json={"username": "bob", "password": PASSWORD})).status_code == 200
    finally:
        stop.set()
        await watcher
        await watcher_engine.dispose()
    # signed up (or registration closed), a wrong password, or the hasher's queue full: never a wait
    assert set(codes) <= {201, 401, 403, 429}, codes
    assert codes.count(401) >= 20
    assert len(seen) > 10 and max(seen) == 0, f"connections held idle during the flood: {max(seen)}"
