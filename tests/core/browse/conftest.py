"""Browse fixtures: the REST app over the session's Fable, with a key of alice's, and notes
written straight to the table (hundreds in milliseconds) for ranking amid many titles."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from fable_core.identity.accounts import create_api_key
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app

Api = Callable[[Caller], Any]
Bulk = Callable[..., Awaitable[None]]


@pytest.fixture
async def api(fable: Fable) -> AsyncIterator[Api]:
    """``async with api(alice) as http:`` the REST API (``/api``) in process, with a key of the caller's."""
    application = create_app(fable)
    started, stop = asyncio.Event(), asyncio.Event()

    async def run() -> None:
        async with application.router.lifespan_context(application):
            started.set()
            await stop.wait()

    task = asyncio.create_task(run())
    await asyncio.wait([task, asyncio.create_task(started.wait())], return_when=asyncio.FIRST_COMPLETED)

    @asynccontextmanager
    async def client(caller: Caller) -> AsyncIterator[httpx.AsyncClient]:
        async with fable.db.transaction() as session:
            _, key = await create_api_key(session, caller.user_id, "tests")
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost/api",
                                     headers={"Authorization": f"Bearer {key}"}) as http:
            yield http

    yield client
    stop.set()
    await task


@pytest.fixture
def bulk(fable: Fable) -> Bulk:
    """``await bulk(alice, "Filler {n}", count)``: notes titled by the pattern (ASCII words, so
    their title key is their lower case), inserted in one statement."""

    async def insert(caller: Caller, pattern: str, count: int) -> None:
        async with fable.db.transaction() as session:
            await session.execute(text(
                "INSERT INTO notes (user_id, title, title_key) "
                "SELECT :user, replace(:pattern, '{n}', n::text), lower(replace(:pattern, '{n}', n::text)) "
                "FROM generate_series(1, :count) AS n"), {"user": caller.user_id, "pattern": pattern, "count": count})

    return insert
