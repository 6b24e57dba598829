"""Slow clients are cut off, on a real uvicorn with the production config (``uvicorn_config``).

Headers have a deadline in the protocol (:mod:`fable_web.protocol`), bodies in the middleware
(:mod:`fable_web.timeouts`); a streaming response after a complete body is never cut. Clients
speak raw HTTP/1.1 over sockets, so a test controls exactly which bytes arrive when.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp
from support.pace import scaled
from support.servers import serve_config

from fable_core.config import Settings
from fable_core.runtime import Fable
from fable_web.app import create_app
from fable_web.server import uvicorn_config
from fable_web.timeouts import BodyTimeoutMiddleware

TIMEOUT = 0.3  # both the header and the per-chunk body deadline
BODY_TOTAL = 0.5
Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@asynccontextmanager
async def running(app: ASGIApp, settings: Settings) -> AsyncIterator[int]:
    """``app`` under uvicorn as ``fable serve`` configures it, on a free port (yielded)."""
    config = uvicorn_config(app, "127.0.0.1", 0, settings, log_level="warning",
                            timeout_graceful_shutdown=1)
    async with serve_config(config) as url:
        yield urlsplit(url).port or 0


@pytest.fixture(scope="module")
def slow_settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"fable_header_timeout": TIMEOUT, "fable_body_timeout": TIMEOUT})


@pytest.fixture(scope="module")
async def fable_port(fable: Fable, slow_settings: Settings) -> AsyncIterator[int]:
    async with running(create_app(fable), slow_settings) as port:
        yield port


async def _echo(request: Request) -> Response:
    return Response(await request.body())


async def _reject(_: Request) -> Response:
    return Response("no", status_code=401)


async def _stream(request: Request) -> StreamingResponse:
    """SSE-like: reads its body, then streams for longer than every body deadline."""
    await request.body()

    async def events() -> AsyncIterator[bytes]:
        for i in range(5):
            yield f"data: {i}\n\n".encode()
            await asyncio.sleep(0.15)

    return StreamingResponse(events(), media_type="text/event-stream")


@pytest.fixture(scope="module")
async def body_port(slow_settings: Settings) -> AsyncIterator[int]:
    """A small app behind the body deadline: /echo reads the body, /reject never does."""
    routes = [Route("/echo", _echo, methods=["POST"]), Route("/reject", _reject, methods=["POST"]),
              Route("/stream", _stream, methods=["POST"])]
    app = BodyTimeoutMiddleware(Starlette(routes=routes), body_timeout=slow_settings.fable_body_timeout,
                                body_total_timeout=BODY_TOTAL)
    async with running(app, slow_settings) as port:
        yield port


@asynccontextmanager
async def connection(port: int) -> AsyncIterator[Streams]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        yield reader, writer
    finally:
        writer.close()
        await writer.wait_closed()


async def read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    """One response with a Content-Length: (status, lower-cased headers, body); it must come
    within a few seconds, so a test fails rather than hangs."""
    async with asyncio.timeout(scaled(5)):
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        status_line, *lines = head.strip().split("\r\n")
        headers = {name.lower(): value.strip() for name, value in (line.split(":", 1) for line in lines)}
        body = await reader.readexactly(int(headers["content-length"]))
    return int(status_line.split()[1]), headers, body


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> bytes:
    """Everything the server sends until it closes the connection, which it must do in time."""
    async with asyncio.timeout(seconds):
        return await reader.read()


def post(path: str, length: int, sent: bytes) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {length}\r\n\r\n").encode() + sent


GET_HEALTH = b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


async def test_unfinished_headers_get_408_and_are_closed_while_others_are_served(fable_port: int) -> None:
    loop = asyncio.get_running_loop()
    async with connection(fable_port) as (reader, writer):
        writer.write(GET_HEALTH[:-2])  # the blank line that ends the headers never comes
        started = loop.time()
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{fable_port}") as client:
            assert (await client.get("/api/health")).status_code == 200
        assert loop.time() - started < TIMEOUT and not reader.at_eof()  # served before the slow one ends
        answer = await closed_within(reader, TIMEOUT * 4)
    assert loop.time() - started >= TIMEOUT * 0.9
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert b"\r\nconnection: close\r\n" in answer


async def test_headers_trickled_a_byte_at_a_time_do_not_extend_the_deadline(fable_port: int) -> None:
    async with connection(fable_port) as (reader, writer):
        writer.write(b"GET /api/health HTTP/1.1\r\nX-Slow: ")

        async def trickle() -> None:
            while not writer.is_closing():
                writer.write(b"a")
                await asyncio.sleep(TIMEOUT / 5)

        trickling = asyncio.create_task(trickle())
        answer = await closed_within(reader, TIMEOUT * 4)
        trickling.cancel()
    assert answer.startswith(b"HTTP/1.1 408 ")


async def test_a_connection_that_sends_nothing_is_closed(fable_port: int) -> None:
    async with connection(fable_port) as (reader, _):
        assert (await closed_within(reader, TIMEOUT * 4)).startswith(b"HTTP/1.1 408 ")


async def test_kept_alive_connection_serves_requests_past_the_header_deadline(fable_port: int) -> None:
    """The deadline runs from each request's first byte: idling between requests is the
    keep-alive timeout's business."""
    async with connection(fable_port) as (reader, writer):
        writer.write(GET_HEALTH)
        assert (await read_response(reader))[0] == 200
        await asyncio.sleep(TIMEOUT * 1.2)
        writer.write(GET_HEALTH)
        status, headers, _ = await read_response(reader)
        assert status == 200
        assert headers.get("connection") != "close"


async def test_a_stalled_body_gets_a_408_json_error_and_the_connection_closes(body_port: int) -> None:
    loop = asyncio.get_running_loop()
    async with connection(body_port) as (reader, writer):
        writer.write(post("/echo", 100, b"x" * 10))
        started = loop.time()
        status, headers, body = await read_response(reader)
        assert loop.time() - started >= TIMEOUT * 0.9
        assert await closed_within(reader, 1) == b""
    assert (status, headers["connection"]) == (408, "close")
    assert json.loads(body)["error"]["type"] == "request_timeout"
    assert json.loads(body)["error"]["details"] == {}


async def test_a_body_trickled_in_slowly_is_cut_at_the_total_deadline(body_port: int) -> None:
    loop = asyncio.get_running_loop()
    async with connection(body_port) as (reader, writer):
        writer.write(post("/echo", 100, b""))
        started = loop.time()

        async def trickle() -> None:
            while not writer.is_closing():
                writer.write(b"x")
                await asyncio.sleep(TIMEOUT / 5)

        trickling = asyncio.create_task(trickle())
        status, _, _ = await read_response(reader)
        trickling.cancel()
    assert status == 408
    assert loop.time() - started >= BODY_TOTAL * 0.9


async def test_a_streaming_response_after_a_complete_body_is_not_cut(body_port: int) -> None:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{body_port}") as client:
        r = await client.post("/stream", content=b"{}")
    assert r.status_code == 200
    assert r.text.count("data: ") == 5  # 0.75 s of streaming: past both body deadlines


async def test_complete_bodies_keep_the_connection_alive(body_port: int) -> None:
    async with connection(body_port) as (reader, writer):
        for word in (b"one", b"two"):
            writer.write(post("/echo", len(word), word))
            status, headers, body = await read_response(reader)
            assert (status, body) == (200, word)
            assert headers.get("connection") != "close"


async def test_an_answer_before_the_body_is_read_closes_the_connection(body_port: int) -> None:
    """Else the unread rest of the body could trickle in for ever on a kept-alive connection."""
    async with connection(body_port) as (reader, writer):
        writer.write(post("/reject", 100, b"x" * 10))
        status, headers, _ = await read_response(reader)
        assert (status, headers["connection"]) == (401, "close")
        assert await closed_within(reader, 1) == b""
