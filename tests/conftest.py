"""Shared fixtures: one embedded PostgreSQL per test session, a clean database per test.

``make test`` runs the suite on two pytest-xdist workers: each is a session of its own, with its
own server, database and session fixtures, so tests never see another worker's rows. The server
lives in a temporary directory (never the user's data dir). Each test starts from
empty tables (TRUNCATE after every test), which also holds for code under test running in
other processes (``fable mcp`` over stdio, uvicorn servers) against the same database.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from support.users import make_user

from fable_core.caller import Caller
from fable_core.config import Settings, load_settings
from fable_core.db.embedded import start_embedded
from fable_core.db.models import Base
from fable_core.runtime import Fable

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fable-data")


@pytest.fixture(scope="session")
def database_url() -> str:
    """URL of the session's test database on a fresh embedded server.

    The cluster lives outside pytest's basetemp: pytest re-chmods that tree to 0700 when another
    session starts, which locks out the ``pgserver`` system user PostgreSQL runs as (as root).
    It is removed at exit, after pgserver's own exit hook (registered later, run earlier) stops it.
    """
    root = Path(tempfile.mkdtemp(prefix="fable-test-pg-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return start_embedded(root / "pg", database="fable_test")


@pytest.fixture(scope="session")
def settings(database_url: str, data_dir: Path) -> Settings:
    return load_settings(
        {}, database_url=database_url, fable_data_dir=data_dir, llm_provider="none",
        fable_secret_key="test-secret-key-not-for-production",
    )


@pytest.fixture(scope="session")
async def fable(settings: Settings) -> AsyncIterator[Fable]:
    app = await Fable.open(settings)
    yield app
    await app.close()


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
# sequences it advanced (also of tables it emptied itself) start again at 1: each test still
# sees ids from 1 in empty tables.
_FILLED = text(" UNION ALL ".join(
    f"SELECT '{t.name}' WHERE EXISTS (SELECT 1 FROM {t.name})" for t in Base.metadata.sorted_tables))
_RESTART_SEQUENCES = text(
    "SELECT setval(format('%I.%I', schemaname, sequencename)::regclass, 1, false) FROM pg_sequences"
    " WHERE last_value IS NOT NULL AND schemaname = current_schema()")


@pytest.fixture(autouse=True)
async def _clean_database(fable: Fable) -> AsyncIterator[None]:
    yield
    await fable.dispatcher.usage.flush()  # this test's usage rows, before their users go
    async with fable.db.engine.begin() as conn:
        filled = set((await conn.execute(_FILLED)).scalars())
        for table in reversed(Base.metadata.sorted_tables):  # rows that refer to others go first
            if table.name in filled:
                await conn.execute(table.delete())
        await conn.execute(_RESTART_SEQUENCES)


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
