"""Alembic environment: migrations always run on a connection Fable hands over.

``fable db upgrade`` and startup call ``fable_core.db.database.Database.upgrade``, which passes
its connection in ``config.attributes['connection']``; running ``alembic`` directly uses
``DATABASE_URL`` (or the embedded server) through the same code path.
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy import Connection

from fable_core.db.migrations import COMPARE_OPTIONS
from fable_core.db.models import Base

target_metadata = Base.metadata


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        transaction_per_migration=False,
        **COMPARE_OPTIONS,
    )


def run_on(connection: Connection) -> None:
    _configure(connection)
    with context.begin_transaction():
        context.run_migrations()


async def _run_standalone() -> None:
    from fable_core.config import load_settings
    from fable_core.db.database import Database

    db = await Database.open(load_settings(), migrate=False)
    try:
        async with db.engine.begin() as conn:
            await conn.run_sync(run_on)
    finally:
        await db.close()


connection = context.config.attributes.get("connection")
if connection is not None:
    run_on(connection)
else:
    asyncio.run(_run_standalone())
