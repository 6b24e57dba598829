"""MCP behind a plain round-robin load balancer: a 2025 session opened on one replica is served
whichever replica its requests reach (the others forward them to the owner, found in the
``mcp_sessions`` registry), 2026-07-28 calls need no session, and a session whose replica is
gone answers the spec's 404 at once, so the client opens a new one."""

from __future__ import annotations

import asyncio
import hashlib
import json
import signal
import time
from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError
from sqlalchemy import select
from support.mcp_clients import ResourceUpdates, data, http_connect, make_key
from support.pace import scaled

from fable_core.db.models import McpSession
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_mcp.session_routes import FORWARDED

_ACCEPT = {"accept": "application/json, text/event-stream"}
_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "replicas", "version": "1"}}}
_PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


def _answer(r: httpx.Response) -> Any:
    """The JSON-RPC answer of a POST, sent as JSON or as one SSE event."""
    if r.headers["content-type"].startswith("application/json"):
        return r.json()
    return json.loads(next(line[5:] for line in r.text.splitlines() if line.startswith("data:")))


def _own_url(url: str) -> dict[str, str]:
    return {"FABLE_REPLICA_URL": url}


async def _unregistered(fable: Fable) -> None:
    with anyio.fail_after(scaled(2)):
        while True:
            async with fable.db.reading() as session:
                if not (await session.scalars(select(McpSession))).all():
                    return
            await anyio.sleep(0.02)


async def _owner_of(fable: Fable, session: str) -> str:
    async with fable.db.reading() as s:
        return (await s.scalars(select(McpSession.replica).where(
            McpSession.id_hash == hashlib.sha256(session.encode()).hexdigest()))).one()


async def _owner(fable: Fable) -> str:
    async with fable.db.reading() as session:
        [replica] = (await session.scalars(select(McpSession.replica))).all()
    return replica


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_sessions_through_the_balancer(cluster: Any, fable: Fable, alice: Caller, bob: Caller) -> None:
    """One cluster for all of these (two replicas take seconds to start); the last one stops a replica."""
    key = await make_key(fable, alice)
    async with cluster(2, each=_own_url, FABLE_MCP_SESSIONS_PER_KEY="3") as c:
        await _a_2025_session_works_for_20_calls_and_hears_the_other_replica(c, fable, key)
        await _2026_calls_need_no_session(c, fable, key)
        await _the_per_key_quota_counts_every_replicas_sessions(c, await make_key(fable, bob))
        session = await _an_unknown_or_forged_session_is_404_and_the_marker_skips_nothing(c, fable, key, bob)
        await _a_draining_replicas_sessions_are_404_elsewhere(c, fable, key, session)


async def _a_2025_session_works_for_20_calls_and_hears_the_other_replica(c: Any, fable: Fable, key: str) -> None:
    updates = ResourceUpdates()
    async with http_connect(f"{c.url}/mcp", key, mode="legacy", message_handler=updates) as client:
        assert client.protocol_version == "2025-11-25"
        note = data(await client.call_tool("create_note", {"title": "Watched across replicas"}))
        await client.subscribe_resource(f"fable://notes/{note['id']}")
        for i in range(20):
            made = data(await client.call_tool("create_note", {"title": f"Balanced {i}"}))
            assert made["title"] == f"Balanced {i}"
        assert set(c.proxy.upstream_of("POST", "/mcp")) == {0, 1}
        owner = await _owner(fable)
        other = next(r.url for r in c.replicas if r.url != owner)
        async with httpx.AsyncClient(base_url=other, headers={"authorization": f"Bearer {key}"}) as api:
            assert (await api.patch(f"/api/notes/{note['id']}", json={"body": "changed elsewhere"})).status_code == 200
        with anyio.fail_after(scaled(10)):  # on the session's GET stream, wherever the balancer sent it
            await updates.arrived.wait()
        assert updates.uris == [f"fable://notes/{note['id']}"]
    await _unregistered(fable)  # closed (DELETE, forwarded or not): its row goes just after the answer


async def _2026_calls_need_no_session(c: Any, fable: Fable, key: str) -> None:
    before = len(c.proxy.served)
    async with http_connect(f"{c.url}/mcp", key) as client:
        assert client.protocol_version == "2026-07-28"
        for i in range(4):
            assert data(await client.call_tool("create_note", {"title": f"Stateless {i}"}))["title"] == f"Stateless {i}"
        async with fable.db.reading() as session:
            assert (await session.scalars(select(McpSession))).all() == []
    assert {i for _, p, i in c.proxy.served[before:] if p == "/mcp"} == {0, 1}


async def _an_unknown_or_forged_session_is_404_and_the_marker_skips_nothing(c: Any, fable: Fable, key: str,
                                                                            bob: Caller) -> str:
    auth = {"authorization": f"Bearer {key}", **_ACCEPT, "mcp-protocol-version": "2025-11-25"}
    async with httpx.AsyncClient(base_url=c.url, timeout=scaled(5)) as http:
        for headers in ({**auth, "mcp-session-id": "f" * 32},
                        {**auth, "mcp-session-id": "f" * 32, FORWARDED: "1"}):
            for _ in range(2):  # each replica
                r = await http.post("/mcp", json=_PING, headers=headers)
                assert r.status_code == 404 and r.json()["error"]["message"] == "Session not found"
        opened = await http.post("/mcp", json=_INIT, headers=auth)
        session = opened.headers["mcp-session-id"]
        owner = c.proxy.upstream_of("POST", "/mcp")[-1]
        other = c.replicas[1 - owner].url
        forged = await http.post(f"{other}/mcp", json=_PING, headers={**auth, "mcp-session-id": session,
                                                                      FORWARDED: "1"})
        assert forged.status_code == 404  # the marker only stops forwarding
        bare = {k: v for k, v in auth.items() if k != "authorization"}
        for target in (c.replicas[owner].url, other):
            r = await http.post(f"{target}/mcp", json=_PING,
                                headers={**bare, "mcp-session-id": session, FORWARDED: "1"})
            assert r.status_code == 401
        bob_key = await make_key(fable, bob)
        r = await http.post(f"{other}/mcp", json=_PING, headers={**auth, "authorization": f"Bearer {bob_key}",
                                                                 "mcp-session-id": session})
        assert r.status_code == 404  # bound to the key that opened it
        r = await http.post(f"{other}/mcp", json=_PING, headers={**auth, "mcp-session-id": session})
        assert r.status_code == 200 and _answer(r) == {"jsonrpc": "2.0", "id": 2, "result": {}}  # via the owner
        await _the_get_stream_is_forwarded_too(http, other, {**auth, "mcp-session-id": session})
    return session


async def _the_get_stream_is_forwarded_too(http: httpx.AsyncClient, other: str, headers: dict[str, str]) -> None:
    """The session's server-to-client stream, opened on the replica that does not hold it, carries
    the notification of a change made there."""
    note = (await http.post(f"{other}/api/notes", json={"title": "Heard through a forwarded stream"},
                            headers={"authorization": headers["authorization"]})).json()
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(f"{other}/mcp", json=initialized, headers=headers)).status_code == 202
    stream = await http.send(http.build_request("GET", f"{other}/mcp", headers={
        **headers, "accept": "text/event-stream"}), stream=True)
    try:
        assert stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream")
        subscribe = {"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe",
                     "params": {"uri": f"fable://notes/{note['id']}"}}
        assert (await http.post(f"{other}/mcp", json=subscribe, headers=headers)).status_code == 200
        changed = await http.patch(f"{other}/api/notes/{note['id']}", json={"body": "changed"},
                                   headers={"authorization": headers["authorization"]})
        assert changed.status_code == 200
        with anyio.fail_after(scaled(10)):
            async for line in stream.aiter_lines():
                if "notifications/resources/updated" in line:
                    assert f"fable://notes/{note['id']}" in line
                    break
    finally:
        await stream.aclose()


async def _the_per_key_quota_counts_every_replicas_sessions(c: Any, key: str) -> None:
    auth = {"authorization": f"Bearer {key}", **_ACCEPT}
    async with httpx.AsyncClient(base_url=c.url, timeout=scaled(5)) as http:
        for _ in range(3):  # on both replicas: neither holds three itself
            assert (await http.post("/mcp", json=_INIT, headers=auth)).status_code == 200
        refused = await http.post("/mcp", json=_INIT, headers=auth)
        assert refused.status_code == 429, refused.text


async def _a_draining_replicas_sessions_are_404_elsewhere(c: Any, fable: Fable, key: str, session: str) -> None:
    """SIGTERM: the replica unregisters its sessions at once; their next request, wherever it
    lands, is the 404 on which a client opens a new session (on a live replica)."""
    url = await _owner_of(fable, session)
    owner = next(r for r in c.replicas if r.url == url)
    other = next(r for r in c.replicas if r.url != url)
    owner.proc.send_signal(signal.SIGTERM)
    headers = {"authorization": f"Bearer {key}", **_ACCEPT, "mcp-protocol-version": "2025-11-25",
               "mcp-session-id": session}
    async with httpx.AsyncClient(timeout=5) as http:
        with anyio.fail_after(2):
            while (r := await http.post(f"{other.url}/mcp", json=_PING, headers=headers)).status_code != 404:
                assert r.status_code == 200
                await anyio.sleep(0.05)
        async with fable.db.reading() as s:
            assert (await s.scalars(select(McpSession).where(McpSession.replica == url))).all() == []
    async with asyncio.timeout(6):
        await owner.proc.wait()


async def test_a_killed_owner_gives_404_at_once_and_a_new_session_works(cluster: Any, fable: Fable,
                                                                       alice: Caller) -> None:
    key = await make_key(fable, alice)
    async with cluster(2, each=_own_url) as c:
        async with http_connect(f"{c.url}/mcp", key, mode="legacy") as client:
            await client.call_tool("create_note", {"title": "Before the kill"})
            url = await _owner(fable)
            owner = next(r for r in c.replicas if r.url == url)
            owner.proc.kill()
            await owner.proc.wait()
            started = time.monotonic()
            with pytest.raises(MCPError, match="Session not found"):
                await client.call_tool("create_note", {"title": "After the kill"})
            assert time.monotonic() - started < 2
        async with http_connect(f"{c.url}/mcp", key, mode="legacy") as again:  # what a client does on 404
            for i in range(3):
                assert data(await again.call_tool("create_note", {"title": f"After {i}"}))["title"] == f"After {i}"
