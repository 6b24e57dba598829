"""Real servers for tests: uvicorn on 127.0.0.1 and a random free port."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from starlette.types import ASGIApp


@asynccontextmanager
async def serve(app: ASGIApp, port: int = 0) -> AsyncIterator[str]:
    """Run ``app`` under uvicorn in this event loop; yields its base URL (http://127.0.0.1:PORT).

    ``port`` 0 takes a free one; a given port lets a test stop a server and start another in
    its place. Open streams get a second to close when it stops."""
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on",
                            timeout_graceful_shutdown=1)
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
        await task
        raise RuntimeError("uvicorn did not start")
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
