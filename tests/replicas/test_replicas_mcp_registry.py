"""The MCP session registry in one process: rows come with sessions and go with them (closed,
idle, the replica stopping); rows of a replica that stopped beating are ignored and pruned."""

from __future__ import annotations

import contextlib
import hashlib
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import anyio
import httpx
from sqlalchemy import func, select, update
from support.mcp_clients import make_key
from support.pace import scaled
from support.servers import free_port, serve

from fable_core.db.models import McpSession
from fable_core.infra.mcp_sessions import STALE, SessionRegistry
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_mcp.http import create_app

_ACCEPT = {"accept": "application/json, text/event-stream"}
_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "registry", "version": "1"}}}


def _key_hash(key: str) -> str:
    return hashlib.sha256(f"Bearer {key}".encode()).hexdigest()


async def _rows(fable: Fable) -> list[McpSession]:
    async with fable.db.reading() as session:
        return list((await session.scalars(select(McpSession))).all())


async def _until(fable: Fable, count: int) -> list[McpSession]:
    with anyio.fail_after(scaled(3)):
        while True:
            if len(rows := await _rows(fable)) == count:
                return rows
            await anyio.sleep(0.02)


async def test_a_sessions_row_goes_when_it_is_closed_idles_out_or_its_replica_stops(fable: Fable,
                                                                                     alice: Caller) -> None:
    port = free_port()
    replica = f"http://127.0.0.1:{port}"
    settings = fable.settings.model_copy(update={"fable_replica_url": replica, "fable_mcp_session_idle_seconds": 0.5})
    key = await make_key(fable, alice)
    auth = {"authorization": f"Bearer {key}", **_ACCEPT}
    async with (serve(create_app(Fable(settings, fable.db)), port=port) as url,
                httpx.AsyncClient(timeout=scaled(5)) as http):
        ids = [(await http.post(f"{url}/mcp", json=_INIT, headers=auth)).headers["mcp-session-id"] for _ in range(2)]
        rows = await _rows(fable)
        assert {r.id_hash for r in rows} == {hashlib.sha256(i.encode()).hexdigest() for i in ids}  # never the id
        assert {(r.replica, r.key_hash) for r in rows} == {(replica, _key_hash(key))}
        closed = await http.delete(f"{url}/mcp", headers={**auth, "mcp-session-id": ids[0],
                                                          "mcp-protocol-version": "2025-11-25"})
        assert closed.status_code == 200
        await _until(fable, 1)
        await _until(fable, 0)  # the other one, idle
        assert (await http.post(f"{url}/mcp", json=_INIT, headers=auth)).status_code == 200
        await _until(fable, 1)
    assert await _rows(fable) == []  # the replica stopped


async def test_rows_of_a_replica_that_stopped_beating_are_ignored_and_pruned(fable: Fable) -> None:
    dead, live = SessionRegistry(fable.db, "http://dead:8000"), SessionRegistry(fable.db, "http://live:8000/")
    await dead.register("old", "key")
    owner = await dead.owner("old")
    assert owner is not None and owner.replica == "http://dead:8000"
    assert await dead.count("key") == 1
    async with fable.db.transaction() as session:
        await session.execute(update(McpSession).values(seen_at=func.now() - timedelta(seconds=STALE + 1)))
    await live.register("new", "key")
    await live.register("stray", "key")  # its removal failed (say): the next beat drops it, once not brand new
    await live.register("fresh", "key")
    async with fable.db.transaction() as session:
        await session.execute(update(McpSession).where(McpSession.id_hash != hashlib.sha256(b"fresh").hexdigest())
                              .values(created_at=func.now() - timedelta(seconds=10)))
    assert await live.owner("old") is None and await live.count("key") == 3
    await live.beat({"new"})
    assert sorted((r.replica, r.id_hash) for r in await _rows(fable)) == sorted(
        ("http://live:8000", hashlib.sha256(s).hexdigest()) for s in (b"new", b"fresh"))


@contextmanager
def _silent_host() -> Iterator[str]:
    """An address that takes no connection and refuses none (a machine gone: SYNs unanswered): a
    listening socket whose one-place backlog is already full."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = [socket.socket() for _ in range(3)]
        try:
            for filler in fillers:
                filler.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    filler.connect(("127.0.0.1", port))
            yield f"http://127.0.0.1:{port}"
        finally:
            for filler in fillers:
                filler.close()


async def test_an_owner_that_does_not_answer_is_404_within_two_seconds(fable: Fable, alice: Caller) -> None:
    key = await make_key(fable, alice)
    port = free_port()
    settings = fable.settings.model_copy(update={"fable_replica_url": f"http://127.0.0.1:{port}"})
    headers = {"authorization": f"Bearer {key}", **_ACCEPT, "mcp-protocol-version": "2025-11-25",
               "mcp-session-id": "a" * 32}
    app = create_app(Fable(settings, fable.db))
    with _silent_host() as gone:
        async with serve(app, port=port) as url, httpx.AsyncClient(timeout=10) as http:
            await SessionRegistry(fable.db, gone).register("a" * 32, _key_hash(key))
            started = time.monotonic()
            r = await http.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers)
            assert r.status_code == 404 and r.json()["error"]["message"] == "Session not found"
            assert time.monotonic() - started < 2.5  # the 1 s connect timeout, on a busy machine
    assert await _rows(fable) == []  # forgotten
