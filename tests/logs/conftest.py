"""Logs fixtures: the web app over the session's Fable, clients signed in or with a key, and
the log rows written so far (the usage log flushed first)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from sqlalchemy import delete, select
from starlette.applications import Starlette

from fable_core.db.models import AppLog
from fable_core.runtime import Fable
from fable_web.app import create_app


@pytest.fixture(autouse=True)
async def _no_earlier_rows(fable: Fable) -> None:
    """Rows an earlier test queued (written in batches, up to a second later) land before this one starts."""
    await fable.dispatcher.usage.flush()
    async with fable.db.transaction() as s:
        await s.execute(delete(AppLog))


@pytest.fixture
async def app(fable: Fable) -> AsyncIterator[Starlette]:
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
def log_rows(fable: Fable) -> Callable[..., Awaitable[list[AppLog]]]:
    """``await log_rows("audit")``: the rows of a category (all without one), oldest first."""

    async def rows(category: str | None = None) -> list[AppLog]:
        await fable.dispatcher.usage.flush()
        statement = select(AppLog).order_by(AppLog.id)
        if category is not None:
            statement = statement.where(AppLog.category == category)
        async with fable.db.reading() as s:
            return list(await s.scalars(statement))

    return rows
