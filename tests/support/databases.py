"""A database of a test's own on the session's server, and plain SQL on any URL."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

__all__ = ["fresh_database", "sql"]


async def sql(url: str, *statements: str) -> list[object]:
    """Run ``statements`` one by one, outside a transaction; a SELECT's first value each (else None)."""
    engine = create_async_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            return [(await conn.execute(text(s))).scalar() if s.lstrip().upper().startswith("SELECT")
                    else (await conn.execute(text(s))) and None for s in statements]
    finally:
        await engine.dispose()


@asynccontextmanager
async def fresh_database(database_url: str, prefix: str) -> AsyncIterator[str]:
    """A new, empty database beside ``database_url``'s (its URL), dropped at the end."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    await sql(database_url, f'CREATE DATABASE "{name}"')
    try:
        yield make_url(database_url).set(database=name).render_as_string(hide_password=False)
    finally:
        await sql(database_url, f'DROP DATABASE "{name}" WITH (FORCE)')
