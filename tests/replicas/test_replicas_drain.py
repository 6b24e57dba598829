"""Graceful shutdown of a real ``fable serve``: on SIGTERM held streams (a 2026 MCP listen
stream, a 2025 GET stream, a chat answer's follow stream) end at once with a reconnect hint, a
request in flight completes, an unfinished answer is marked interrupted, and the process exits
well within ``FABLE_SHUTDOWN_TIMEOUT`` although clients keep their connections open. A request
arriving while draining is answered 503."""

from __future__ import annotations

import asyncio
import json
import signal
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest
from support.fake_llm import FakeLLM, Reply
from support.mcp_clients import http_connect, make_key
from support.pace import scaled
from support.servers import serve

from fable_core.db.models import Message
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app
from fable_web.drain import Drain

_ACCEPT = {"accept": "application/json, text/event-stream"}


async def _get_stream(client: httpx.AsyncClient, url: str, key: str) -> httpx.Response:
    """A 2025-06-18 session's server-to-client GET stream, opened (headers read, body pending)."""
    auth = {"authorization": f"Bearer {key}", **_ACCEPT}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "drain", "version": "1"}}}
    r = await client.post(f"{url}/mcp", json=init, headers=auth)
    session = {**auth, "mcp-session-id": r.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    await client.post(f"{url}/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
    stream = await client.send(client.build_request("GET", f"{url}/mcp", headers={
        **session, "accept": "text/event-stream"}), stream=True)
    assert stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream")
    return stream


async def test_sigterm_ends_held_streams_finishes_calls_and_exits(served: Any, fable: Fable,
                                                                  alice: Caller) -> None:
    key = await make_key(fable, alice)
    rest_go = asyncio.Event()

    async def slow_body() -> AsyncIterator[bytes]:
        body = json.dumps({"title": "Sent while the server stops"}).encode()
        yield body[:10]
        await rest_go.wait()
        yield body[10:]

    async with (
        httpx.AsyncClient(timeout=scaled(20)) as client,
        http_connect(f"{served.url}/mcp", key) as mcp,
        mcp.listen(resource_subscriptions=["fable://notes/1"]) as listening,
    ):
        held = await _get_stream(client, served.url, key)
        in_flight = asyncio.create_task(client.post(
            f"{served.url}/api/notes", content=slow_body(),
            headers={"authorization": f"Bearer {key}", "content-type": "application/json"}))
        await asyncio.sleep(0.2)  # the request is in: headers and the start of its body
        started = time.monotonic()
        served.proc.send_signal(signal.SIGTERM)
        await asyncio.sleep(0.3)
        rest_go.set()
        done = await in_flight
        assert done.status_code == 200 and done.json()["title"] == "Sent while the server stops"
        rest = b"".join([chunk async for chunk in held.aiter_bytes()])
        assert rest.endswith(b"retry: 1000\n\n")  # the reconnect hint, then the end
        events = aiter(listening)
        with anyio.fail_after(5), pytest.raises(StopAsyncIteration):  # closed the spec's way: re-listen
            await anext(events)
        async with asyncio.timeout(4):
            await served.proc.wait()
        assert time.monotonic() - started < 4


async def test_sigterm_marks_an_unfinished_answer_interrupted(served: Any, fable: Fable, alice: Caller,
                                                             replicas_llm: tuple[FakeLLM, str]) -> None:
    """An answer still generating when the server stops: its follow stream ends with the
    reconnect hint, and the answer is kept as ``interrupted`` (to regenerate), not left generating."""
    fake, _ = replicas_llm
    hold = threading.Event()
    fake.replies.append(Reply("never heard", hold=hold))
    key = await make_key(fable, alice)
    auth = {"authorization": f"Bearer {key}"}
    try:
        async with httpx.AsyncClient(base_url=served.url, headers=auth, timeout=scaled(20)) as client:
            started = await client.post("/api/chat/start", json={"content": "Say something slowly"})
            assert started.status_code == 202, started.text
            turn = started.json()
            follow = await client.send(client.build_request(
                "GET", f"/api/chat/conversations/{turn['conversation_id']}/generation/stream"), stream=True)
            assert follow.status_code == 200
            served.proc.send_signal(signal.SIGTERM)
            rest = b"".join([chunk async for chunk in follow.aiter_bytes()])
            assert rest.endswith(b"retry: 1000\n\n")
        async with asyncio.timeout(4):
            await served.proc.wait()
    finally:
        hold.set()
    async with fable.db.reading() as session:
        answer = await session.get(Message, turn["message_id"])
        assert answer is not None and answer.status == "interrupted"


async def test_once_draining_a_request_on_a_kept_connection_is_sent_elsewhere(fable: Fable) -> None:
    drain = Drain(create_app(fable), grace=0)
    async with serve(drain) as url, httpx.AsyncClient(base_url=url) as client:
        assert (await client.get("/api/health")).status_code == 200
        await drain.start()
        r = await client.get("/api/health")  # the same kept connection
        assert r.status_code == 503 and r.headers["retry-after"] == "1" and r.headers["connection"] == "close"
        assert r.json()["error"]["type"] == "unavailable"


async def test_a_call_cut_at_the_shutdown_deadline_gets_its_surfaces_error_and_no_traceback(
        served: Any, fable: Fable, alice: Caller, replicas_llm: tuple[FakeLLM, str]) -> None:
    """Still running when FABLE_SHUTDOWN_TIMEOUT (4 s here) is up: a REST call whose body never
    ends gets 503 with Retry-After and the REST error body; an MCP call following an answer the
    model never finishes gets a JSON-RPC error for its id. The log holds no traceback."""
    fake, _ = replicas_llm
    hold = threading.Event()
    fake.replies.append(Reply("never heard", hold=hold))
    key = await make_key(fable, alice, "write", ["default", "chat"])  # follow_answer is a chat tool
    auth = {"authorization": f"Bearer {key}"}
    host, port = served.url.removeprefix("http://").split(":")

    async def endless_post() -> tuple[int, dict[str, str], bytes]:
        """A POST whose body never comes in full (a raw socket: an HTTP client waits to send it all)."""
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(f"POST /api/notes HTTP/1.1\r\nhost: {host}\r\nauthorization: Bearer {key}\r\n"
                     "content-type: application/json\r\ncontent-length: 100\r\n\r\n{\"title\": \"Never".encode())
        await writer.drain()
        head, _, rest = (await reader.read(65_536)).partition(b"\r\n\r\n")
        status, *fields = head.decode().split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (f.partition(":") for f in fields)}
        while len(rest) < int(headers.get("content-length", 0)):
            rest += await reader.read(65_536)
        writer.close()
        return int(status.split()[1]), headers, rest

    try:
        async with httpx.AsyncClient(base_url=served.url, headers=auth, timeout=scaled(20)) as client:
            turn = (await client.post("/api/chat/start", json={"content": "Say something slowly"})).json()
            rest = asyncio.create_task(endless_post())
            follow = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
                "name": "follow_answer", "arguments": {"conversation_id": turn["conversation_id"]},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {}}}}
            mcp = asyncio.create_task(client.post("/mcp", json=follow, headers={
                **_ACCEPT, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
                "mcp-name": "follow_answer"}))
            await asyncio.sleep(0.5)  # both are in
            served.proc.send_signal(signal.SIGTERM)
            async with asyncio.timeout(scaled(10)):
                refused, cut = await rest, await mcp
        async with asyncio.timeout(scaled(10)):
            await served.proc.wait()
    finally:
        hold.set()
    status, headers, answer = refused
    assert status == 503 and headers["retry-after"] == "1"
    assert json.loads(answer)["error"]["type"] == "unavailable"
    body = cut.text
    message = json.loads(body.split("data: ")[-1].strip() if "data: " in body else body)
    assert message["id"] == 7 and "shutting down" in message.get("error", {}).get("message", ""), body
    assert served.proc.stderr is not None
    log = "".join(served.lines) + (await served.proc.stderr.read()).decode()
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log[-3000:]
