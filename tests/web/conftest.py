"""Web fixtures: the app over the session's Fable, HTTP clients signed in as alice or bob.

Clients talk to the app in-process (``httpx.ASGITransport``) with the app's lifespan entered;
they send a same-origin ``Origin`` header as browsers do, unless a test builds one without.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest
from sqlalchemy import func, select
from starlette.applications import Starlette
from support.web import BASE, make_client, signed_in

from fable_core.db.models import Base
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app


@pytest.fixture
async def app(fable: Fable) -> AsyncIterator[Starlette]:
    """The app with its lifespan running (in a task of its own: MCP's task group needs that)."""
    application = create_app(fable)
    started, stop = asyncio.Event(), asyncio.Event()

    async def run() -> None:
        async with application.router.lifespan_context(application):
            started.set()
            await stop.wait()

    task = asyncio.create_task(run())
    await asyncio.wait([task, asyncio.create_task(started.wait())], return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        task.result()
    yield application
    stop.set()
    await task


@pytest.fixture
async def client(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    """Anonymous, same-origin."""
    async with make_client(app, origin=BASE) as c:
        yield c


@pytest.fixture
async def as_alice(app: Starlette, alice: Caller) -> AsyncIterator[httpx.AsyncClient]:
    async with signed_in(app, "alice") as c:
        yield c


@pytest.fixture
async def as_bob(app: Starlette, bob: Caller) -> AsyncIterator[httpx.AsyncClient]:
    async with signed_in(app, "bob") as c:
        yield c


RowCounts = Callable[[], Awaitable[dict[str, int]]]


@pytest.fixture
def row_counts(fable: Fable) -> RowCounts:
    """Rows per table, except the logs and limiter hits that refusals may legitimately add."""

    async def count() -> dict[str, int]:
        skip = {"app_logs", "rate_limit_hits"}
        async with fable.db.engine.connect() as conn:
            return {
                t.name: (await conn.execute(select(func.count()).select_from(t))).scalar_one()
                for t in Base.metadata.sorted_tables if t.name not in skip
            }

    return count
