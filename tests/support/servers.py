"""Real servers for tests: uvicorn on 127.0.0.1 and a random free port, the one runner.

``serve(app)`` runs an app in the test's own event loop (where the session's database pool
lives); ``serve_config(config)`` does the same for a ready ``uvicorn.Config`` (the production
one of ``fable_web.server.uvicorn_config``, say); ``serve_in_thread(app)`` runs it in a thread
with a loop of its own, for fakes that must keep answering while the test's loop is busy or
blocked (the fake LLM servers). ``free_port()`` names a port nothing listens on.
``fable_serve(env, *args)`` runs the real ``fable serve`` executable, as an operator does.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.types import ASGIApp

from .pace import scaled

__all__ = ["FABLE", "fable_process", "fable_serve", "free_port", "serve", "serve_config", "serve_in_thread",
           "server_config"]

FABLE = str(Path(sys.executable).with_name("fable"))


def server_config(app: ASGIApp, port: int = 0, **options: Any) -> uvicorn.Config:
    """How tests run an app: 127.0.0.1, warnings only, lifespan on, no access log, and open
    streams get a second to close when the server stops. ``options`` override any of it."""
    defaults: dict[str, Any] = {"host": "127.0.0.1", "port": port, "log_level": "warning", "lifespan": "on",
                                "access_log": False, "timeout_graceful_shutdown": 1}
    return uvicorn.Config(app, **(defaults | options))


def _url(server: uvicorn.Server) -> str:
    host, port = server.servers[0].sockets[0].getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


@asynccontextmanager
async def serve(app: ASGIApp, port: int = 0, **options: Any) -> AsyncIterator[str]:
    """Run ``app`` under uvicorn in this event loop; yields its base URL (http://127.0.0.1:PORT).

    ``port`` 0 takes a free one; a given port lets a test stop a server and start another in
    its place. ``options`` are uvicorn.Config's (see :func:`server_config`)."""
    async with serve_config(server_config(app, port, **options)) as url:
        yield url


@asynccontextmanager
async def serve_config(config: uvicorn.Config) -> AsyncIterator[str]:
    """Run a uvicorn ``config`` in this event loop until the block ends; yields its base URL."""
    server = uvicorn.Server(config)
    started = asyncio.Event()
    original_startup = server.startup

    async def startup(sockets: object = None) -> None:
        await original_startup(sockets=sockets)  # type: ignore[arg-type]
        started.set()

    server.startup = startup  # type: ignore[method-assign]
    task = asyncio.create_task(server.serve())
    waiter = asyncio.create_task(started.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if not started.is_set():
        waiter.cancel()
        with contextlib.suppress(SystemExit):  # what uvicorn does when it cannot bind or its lifespan fails
            await task
        raise RuntimeError("uvicorn did not start")
    try:
        yield _url(server)
    finally:
        server.should_exit = True
        await task


@contextmanager
def serve_in_thread(app: ASGIApp, port: int = 0, **options: Any) -> Iterator[str]:
    """Run ``app`` under uvicorn in a thread with its own event loop; yields its base URL."""
    server = uvicorn.Server(server_config(app, port, **options))
    thread = threading.Thread(target=server.run, daemon=True, name="test-server")
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.005)
    try:
        yield _url(server)
    finally:
        server.should_exit = True
        thread.join(5)


def free_port() -> int:
    """A port nothing listens on (for 'server down' tests, or to start a server on later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@asynccontextmanager
async def fable_process(env: dict[str, str],
                        *args: str) -> AsyncIterator[tuple[asyncio.subprocess.Process, str, list[str]]]:
    """Run ``fable serve ARGS`` (the installed executable) with ``env`` over this environment
    until it says it is serving and answers ``/api/health`` on the URL it names; yields the
    process, that URL and the lines it printed (stderr). Killed at the end unless the test
    stopped it (with the signal and at the moment it chose)."""
    proc = await asyncio.create_subprocess_exec(FABLE, "serve", *args, env={**os.environ, **env},
                                                stdin=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None
    lines: list[str] = []
    try:
        async with asyncio.timeout(scaled(60)):
            while not any("serving on" in line for line in lines):
                line = (await proc.stderr.readline()).decode()
                assert line, f"fable serve exited: {lines}"
                lines.append(line)
        url = lines[-1].split("serving on ")[1].split()[0]
        async with httpx.AsyncClient(timeout=scaled(10)) as client, asyncio.timeout(scaled(30)):
            while True:  # uvicorn takes the connections right after the message
                try:
                    await client.get(f"{url}/api/health")
                    break
                except httpx.ConnectError:
                    await asyncio.sleep(0.05)
        yield proc, url, lines
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


@asynccontextmanager
async def fable_serve(env: dict[str, str], *args: str) -> AsyncIterator[list[str]]:
    """:func:`fable_process`, stopped with SIGTERM as a service manager does; yields the lines
    it printed."""
    async with fable_process(env, *args) as (proc, _, lines):
        try:
            yield lines
        finally:
            if proc.returncode is None:
                proc.terminate()
            await proc.wait()
