"""Limits and remembered credentials agree across ``fable serve`` replicas on one database.

Each replica remembers who a key or a session cookie stands for for ``TTL`` (2 s). A revocation
through one replica (a key revoked, a user disabled, a session ended or signed out) is announced on commit
(:mod:`fable_core.identity.revocations`): the other replica refuses the credential at once, though it
answered with it a moment before, well within the TTL that stays the bound if a notice is lost.
The sign-in limit per address counts attempts on every replica together (it lives in
PostgreSQL, :mod:`fable_core.infra.rate_limits`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from support.mcp_clients import make_key, make_revocable_key, revoke_key
from support.pace import scaled
from support.users import PASSWORD, make_user

from fable_core.config import Settings
from fable_core.db.database import Database
from fable_core.db.listener import Listener
from fable_core.db.models import ApiKey
from fable_core.errors import Unauthenticated
from fable_core.identity import accounts, login_sessions
from fable_core.identity.key_callers import TTL
from fable_core.identity.oauth.clients import register_client
from fable_core.identity.oauth.server import revoke_token
from fable_core.identity.revocations import CHANNEL
from fable_core.infra.rate_limits import LIMITS
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.sessions import COOKIE

# A refusal sooner than this after the replica last accepted (and remembered) the credential
# came from the notice: the remembered answer would have lasted TTL. The margin is for a slow
# machine's revoking request; here the refusal comes 40-110 ms after.
_NOTICED = TTL - 0.25

_MCP_2026 = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28",
             "mcp-method": "tools/list"}
_TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "replicas", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {}}}}


async def _sign_in(http: httpx.AsyncClient, url: str, username: str) -> dict[str, str]:
    """Headers carrying a session cookie for ``username``, signed in through ``url``."""
    r = await http.post(f"{url}/api/auth/login", json={"username": username, "password": PASSWORD},
                        headers={"origin": url})
    assert r.status_code == 200, r.text
    return {"cookie": f"{COOKIE}={r.cookies[COOKIE]}"}


async def _status(http: httpx.AsyncClient, url: str, headers: dict[str, str]) -> int:
    return (await http.get(f"{url}/api/auth/me", headers=headers)).status_code


async def _refused_soon(http: httpx.AsyncClient, url: str, headers: dict[str, str], primed: float,
                        method: str = "GET", path: str = "/api/auth/me", **body: Any) -> float:
    """Ask ``url`` until it refuses (401); how long after ``primed`` (just after it last accepted)
    it did: under TTL, the notice cleared its memory, not the TTL's expiry."""
    while True:
        r = await http.request(method, f"{url}{path}", headers=headers, **body)
        if r.status_code == 401:
            return time.monotonic() - primed
        assert r.status_code == 200, r.text
        assert time.monotonic() - primed < TTL + 1, "still accepted past the TTL"


async def test_revocations_and_the_sign_in_limit_hold_across_replicas(
        cluster: Any, fable: Fable, alice: Caller, bob: Caller) -> None:
    await make_user(fable, "root", role="admin")
    # one cluster for every check (starting one costs seconds); the sign-in limit is checked
    # for an address of its own, as a load balancer tells it in X-Forwarded-For
    async with cluster(2, TRUST_PROXY_HEADERS="true") as c, httpx.AsyncClient(timeout=scaled(10)) as http:
        a, b = c.replicas[0].url, c.replicas[1].url
        alice_key, bob_key = await make_key(fable, alice), await make_key(fable, bob)
        root = await _sign_in(http, a, "root")
        alice_web = await _sign_in(http, a, "alice")
        bob_web = await _sign_in(http, b, "bob")
        alice_bearer = {"authorization": f"Bearer {alice_key}"}
        bob_bearer = {"authorization": f"Bearer {bob_key}"}
        keys = (await http.get(f"{a}/api/api-keys", headers=alice_web)).json()["items"]

        # alice's key, remembered by both replicas, revoked through A: refused on B, over REST and MCP
        for url in (a, b):
            assert await _status(http, url, alice_bearer) == 200
        mcp = await http.post(f"{b}/mcp", json=_TOOLS_LIST, headers={**alice_bearer, **_MCP_2026})
        assert mcp.status_code == 200 and mcp.json()["result"]["tools"], mcp.text
        primed = time.monotonic()
        r = await http.delete(f"{a}/api/api-keys/{keys[0]['id']}", headers={**alice_web, "origin": a})
        assert r.status_code == 200, r.text
        assert await _refused_soon(http, b, {**alice_bearer, **_MCP_2026}, primed, "POST", "/mcp",
                                   json=_TOOLS_LIST) < _NOTICED
        assert await _status(http, b, alice_bearer) == 401

        # bob, disabled by an admin through A: his key and his session are refused on B
        for url in (a, b):
            assert await _status(http, url, bob_bearer) == 200
            assert await _status(http, url, bob_web) == 200
        primed = time.monotonic()
        r = await http.patch(f"{a}/api/admin/users/{bob.user_id}", json={"is_active": False},
                             headers={**root, "origin": a})
        assert r.status_code == 200 and r.json()["is_active"] is False, r.text
        assert await _refused_soon(http, b, bob_bearer, primed) < _NOTICED
        assert await _refused_soon(http, b, bob_web, primed) < _NOTICED

        # alice ends her phone's session (signed in through B) from her laptop, through A
        alice_phone = await _sign_in(http, b, "alice")
        assert await _status(http, b, alice_phone) == 200
        sessions = (await http.get(f"{a}/api/auth/sessions", headers=alice_web)).json()["items"]
        [phone] = [item["id"] for item in sessions if not item["current"]]
        primed = time.monotonic()
        r = await http.delete(f"{a}/api/auth/sessions/{phone}", headers={**alice_web, "origin": a})
        assert r.status_code == 200, r.text
        assert await _refused_soon(http, b, alice_phone, primed) < _NOTICED

        # alice signs out through A: her cookie, which B remembered, is refused there
        assert await _status(http, b, alice_web) == 200
        primed = time.monotonic()
        r = await http.post(f"{a}/api/auth/logout", json={}, headers={**alice_web, "origin": a})
        assert r.status_code == 204, r.text
        assert await _refused_soon(http, b, alice_web, primed) < _NOTICED

        # the sign-in limit per address: attempts alternating between the replicas add up
        limit = LIMITS["login"].attempts
        client = {"origin": c.url, "x-forwarded-for": "198.51.100.9"}
        for _ in range(limit):
            r = await http.post(f"{c.url}/api/auth/login", json={"username": "root", "password": "not it"},
                                headers=client)
            assert r.status_code == 401, r.text
        assert c.proxy.upstream_of("POST", "/api/auth/login") == [0, 1] * (limit // 2)
        refused = await http.post(f"{c.url}/api/auth/login", json={"username": "root", "password": PASSWORD},
                                  headers=client)
        assert refused.status_code == 429 and refused.json()["error"]["type"] == "rate_limited", refused.text
        await _sign_in(http, a, "root")  # from another address, signing in works as before


async def test_a_key_revoked_by_one_process_is_forgotten_by_another_at_once(
        fable: Fable, settings: Settings, alice: Caller) -> None:
    other = Fable(settings, await Database.open(settings, migrate=False))  # another process's runtime
    try:
        key, key_id = await make_revocable_key(fable, alice)
        assert (await other.keys.caller(key, "rest")).username == "alice"  # remembered there for TTL
        await other.revocations.ready()
        primed = time.monotonic()
        await revoke_key(fable, alice, key_id)  # as any process does it, announcing on commit
        async with asyncio.timeout(TTL):
            while True:
                try:
                    await other.keys.caller(key, "rest")
                except Unauthenticated:
                    break
                await asyncio.sleep(0.01)
        assert time.monotonic() - primed < _NOTICED and other.revocations.heard >= 2  # connect + notice
    finally:
        await other.close()


async def test_an_answer_read_while_a_revocation_is_heard_is_not_remembered(fable: Fable, alice: Caller) -> None:
    key, key_id = await make_revocable_key(fable, alice)
    async with fable.db.transaction() as holding:  # the lookup's stamp of first use waits on this lock
        await holding.execute(select(ApiKey).where(ApiKey.id == key_id).with_for_update())
        looking = asyncio.create_task(fable.keys.caller(key, "rest"))
        await asyncio.sleep(0.2)
        assert not looking.done()
        fable.keys.forget()  # a notice heard meanwhile: what the lookup read may predate it
    assert (await looking).username == "alice"
    async with fable.db.transaction() as session:
        await session.execute(delete(ApiKey).where(ApiKey.id == key_id))  # behind the process's back
    with pytest.raises(Unauthenticated):
        await fable.keys.caller(key, "rest")


async def test_every_way_of_revoking_announces_on_commit_only(fable: Fable, alice: Caller, bob: Caller) -> None:
    """Each path that ends or narrows a credential notifies ``fable_revoked``, heard by any
    process listening; one rolled back does not."""
    root = await make_user(fable, "root", role="admin", password=None)
    admin = Caller(user_id=root.user_id, username="root", role="admin", surface="internal")
    heard: list[str | None] = []
    listener = Listener(fable.db.url, {CHANNEL: heard.append})
    listener.start()

    async def notices(change: Callable[[AsyncSession], Awaitable[object]]) -> list[str | None]:
        async with fable.db.transaction() as session:
            await change(session)
        async with fable.db.reading() as session:  # a marker, delivered after what came before it
            await session.execute(select(func.pg_notify(CHANNEL, "marker")))
        async with asyncio.timeout(scaled(5)):
            while "marker" not in heard:  # noqa: ASYNC110 - heard by the listener's connection
                await asyncio.sleep(0.01)
        said = heard[:heard.index("marker")]
        heard.clear()
        return said

    try:
        await listener.listening.wait()
        heard.clear()
        _, key_id = await make_revocable_key(fable, alice)
        assert await notices(lambda s: accounts.revoke_api_key(s, alice.user_id, key_id)) == [f"api key {key_id}"]
        _, key_id = await make_revocable_key(fable, alice)
        assert await notices(lambda s: accounts.revoke_any_api_key(s, key_id)) == [f"api key {key_id}"]
        started = [(await _started(fable, bob)) for _ in range(2)]
        assert await notices(lambda s: login_sessions.end_session(s, bob.user_id, started[0])) == [
            f"session of user {bob.user_id}"]
        assert await notices(lambda s: accounts.set_password(s, "bob", PASSWORD + " 2")) == [
            f"session of user {bob.user_id}"]  # its other session ended
        assert await notices(lambda s: accounts.set_role(s, "bob", "admin")) == [f"user {bob.user_id} role"]
        assert await notices(lambda s: accounts.set_active(s, "bob", False, by=root.user_id)) == [
            f"user {bob.user_id} disabled"]
        assert await notices(lambda s: accounts.delete_user(s, "bob", by=root.user_id)) == [
            f"user {bob.user_id} deleted"]
        assert await notices(lambda s: revoke_token(s, {"client_id": "nobody", "token": "fat_x"})) == []
        client = await _client(fable)
        assert await notices(lambda _: fable.call("disable_oauth_client", {"client_id": client}, admin)) == [
            "oauth client"]
        _, key_id = await make_revocable_key(fable, alice)
        with pytest.raises(RuntimeError, match="rolled back"):
            await notices(lambda s: _revoke_then_fail(s, alice, key_id))
        assert await notices(lambda _: asyncio.sleep(0)) == []
    finally:
        await listener.close()


async def _started(fable: Fable, caller: Caller) -> int:
    async with fable.db.transaction() as session:
        return (await login_sessions.start_session(session, caller.user_id)).row.id


async def _client(fable: Fable) -> str:
    async with fable.db.transaction() as session:
        client = await register_client(session, {"client_name": "Connector", "redirect_uris": [
            "http://127.0.0.1:8765/callback"], "token_endpoint_auth_method": "none"}, None)
    return client.client_id


async def _revoke_then_fail(session: AsyncSession, caller: Caller, key_id: int) -> None:
    await accounts.revoke_api_key(session, caller.user_id, key_id)
    raise RuntimeError("rolled back")
