"""The database a Fable process talks to: engine, sessions, startup checks and migrations.

``Database.open(settings)`` resolves where the data lives (``DATABASE_URL`` or the embedded
server), verifies the extensions Fable needs, applies pending migrations under an advisory lock
(so concurrent processes starting at once do not race) after bringing the extensions up to the
server's versions, runs the vector extension's self-test (:mod:`fable_core.db.vectors`: its
verdict is ``Database.vectors``), and hands out transactional sessions.
With ``DATABASE_READ_URL`` it also opens the read replica (:mod:`fable_core.db.replica`), which
only :meth:`Database.replica_reading` uses; migrations and everything else run on the primary.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager, asynccontextmanager
from typing import Any, cast

from sqlalchemy import ColumnElement, CursorResult, Result, delete, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.pool import NullPool

from fable_core.config import Settings
from fable_core.db.errors import translated_db_errors
from fable_core.db.migrations import Migration, current_revision, upgrade_to_head
from fable_core.db.replica import CONNECT_TIMEOUT, STAMP, Replica, ReplicaFailed
from fable_core.db.vectors import ON, VectorSupport, adapt_schema, check_vectors
from fable_core.errors import InvalidInput, Unavailable

__all__ = ["REQUIRED_EXTENSIONS", "Database", "async_url", "delete_in_batches", "rowcount", "storage_description",
           "update_extensions"]

REQUIRED_EXTENSIONS: dict[str, str] = {
    "vector": "pgvector (semantic search)",
    "pg_trgm": "pg_trgm (fuzzy title matching)",
}
_MIGRATION_LOCK = 0x0F_AB_1E
_log = logging.getLogger(__name__)


def async_url(url: str, variable: str = "DATABASE_URL") -> str:
    """Accept ``postgres://`` and ``postgresql[+driver]://`` URLs and pin the asyncpg driver."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://"):]
    try:
        parsed = make_url(url)
    except ArgumentError as e:
        raise InvalidInput(f"{variable} is not a database URL: {url!r}", variable=variable) from e
    if parsed.get_backend_name() != "postgresql":
        raise InvalidInput(
            f"{variable} must be a PostgreSQL URL, got {parsed.get_backend_name()!r}",
            variable=variable,
        )
    if "sslmode" in parsed.query:  # libpq spelling; asyncpg calls it ``ssl``
        sslmode = parsed.query["sslmode"]
        parsed = parsed.difference_update_query(["sslmode"]).update_query_dict({"ssl": sslmode})
    return parsed.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)


def rowcount(result: Result[*tuple[Any, ...]]) -> int:
    """How many rows an UPDATE or DELETE run through a session touched. Its result is a
    ``CursorResult``, which ``AsyncSession.execute`` types only as a ``Result``."""
    return cast("CursorResult[*tuple[Any, ...]]", result).rowcount or 0


async def delete_in_batches(db: Database, model: Any, *conditions: ColumnElement[bool], batch: int) -> int:
    """Delete ``model``'s rows matching ``conditions``, ``batch`` rows per transaction (so a
    purge of millions never holds one long lock or one huge WAL record); how many."""
    total = 0
    while True:
        doomed = select(model.id).where(*conditions).limit(batch).scalar_subquery()
        async with db.transaction() as session:
            count = rowcount(await session.execute(delete(model).where(model.id.in_(doomed))))
        total += count
        if count < batch:
            return total


DETACHED = 4  # detached snapshots (exports being read) at once per process
DETACHED_IDLE = 900.0  # seconds a detached snapshot may wait for its reader (a download) before the server ends it
WRITES_FAILING_FOR = 60.0  # seconds after a write that failed for the server's sake that health says so


class Database:
    """An engine plus a session factory; one per process and database."""

    def __init__(self, engine: AsyncEngine, url: str, replica: Replica | None = None, *,
                 embedded: bool = False) -> None:
        self.engine = engine
        self.url = url
        self.replica = replica
        self.embedded = embedded
        self._vectors: VectorSupport | None = None
        self.lost_at: float | None = None  # when this process last found the server gone (monotonic)
        self.unwritable: tuple[float, str] | None = None  # when a write last failed for the server's sake, and why
        self._detached: AsyncEngine | None = None  # detached_snapshot's connections, outside the pool
        self._detached_slots = asyncio.Semaphore(DETACHED)
        self.on_commit: list[Callable[[AsyncSession], None]] = []  # called with each committed transaction's session
        self.sessions = async_sessionmaker(engine, expire_on_commit=False, autoflush=False)
        self._reading = async_sessionmaker(
            engine.execution_options(isolation_level="AUTOCOMMIT"), expire_on_commit=False, autoflush=False
        )

    def translated(self) -> AbstractContextManager[None]:
        """Driver errors as domain errors (:func:`~fable_core.db.errors.translated_db_errors`),
        noting when the server could not be reached (:meth:`reached_for`) or could not write
        (:meth:`writes_failing`)."""
        return translated_db_errors(self._lost, self._cannot_write)

    def _lost(self) -> None:
        self.lost_at = time.monotonic()

    def _cannot_write(self, why: str) -> None:
        self.unwritable = (time.monotonic(), why)

    def writes_failing(self, within: float = WRITES_FAILING_FOR) -> str | None:
        """Why writes fail, when one failed for the server's sake (a full disk, a read-only
        server) in the last ``within`` seconds: what health reports as ``degraded``."""
        if self.unwritable is None or time.monotonic() - self.unwritable[0] > within:
            return None
        return self.unwritable[1]

    def reached_for(self) -> float:
        """Seconds since this process last found the database unreachable (a day if it never
        has). A judge of other processes' heartbeats waits this long at least: during an outage
        nobody could beat, and a beat it finds old may be the outage's, not a death's."""
        return 86400.0 if self.lost_at is None else time.monotonic() - self.lost_at

    @classmethod
    async def open(cls, settings: Settings, *, migrate: bool = True, check: bool = True) -> Database:
        """Connect (starting the embedded server if needed), check extensions, migrate, and
        (with ``check``) run the vector extension's self-test."""
        if settings.database_url:
            url = async_url(settings.database_url)
        else:
            from fable_core.db.embedded import start_embedded

            try:
                url = await asyncio.to_thread(start_embedded, settings.pg_data_dir)
            except OSError as e:  # an unusable FABLE_DATA_DIR: say which, not a traceback
                raise Unavailable(f"cannot start the embedded PostgreSQL in {settings.pg_data_dir}: {e}") from e
        engine = create_async_engine(
            url,
            pool_size=settings.fable_db_pool_size,
            max_overflow=settings.fable_db_pool_size,
            pool_pre_ping=False,
            # which process a connection is (pg_stat_activity): replicas share one database
            connect_args={"server_settings": {"application_name": f"fable {os.getpid()}"}},
        )
        db = cls(engine, url, embedded=not settings.database_url)
        try:
            if settings.database_read_url:
                db.replica = Replica(
                    create_async_engine(
                        async_url(settings.database_read_url, "DATABASE_READ_URL"),
                        pool_size=settings.fable_db_pool_size,
                        max_overflow=settings.fable_db_pool_size,
                        connect_args={"timeout": CONNECT_TIMEOUT},
                    ),
                    engine, settings.fable_read_your_writes_seconds,
                )
            try:
                async with engine.connect() as conn:
                    await check_extensions(conn)
            except (OSError, DBAPIError) as e:  # refused, unknown host, bad password, no such database
                where = make_url(url).render_as_string(hide_password=True)
                raise Unavailable(f"cannot connect to PostgreSQL at {where}: {e}") from e
            if check:
                await db.check_vectors()
            if migrate:
                await db.upgrade()
        except BaseException:
            await db.close()
            raise
        return db

    @property
    def vectors(self) -> VectorSupport:
        """The vector extension's self-test verdict (:meth:`check_vectors`); on until checked."""
        return self._vectors or ON

    async def check_vectors(self) -> VectorSupport:
        """Run (or recall) the vector extension's self-test: :mod:`fable_core.db.vectors`."""
        if self.embedded:
            from fable_core.db.embedded import cpu_shortfall, server_fingerprint

            missing = await asyncio.to_thread(cpu_shortfall)
            if missing:  # known without crashing a backend to find out
                self._vectors = VectorSupport(False, missing)
                _log.warning("semantic search is off: %s", missing)
                return self._vectors
            local = await asyncio.to_thread(server_fingerprint)
        else:
            local = ""
        self._vectors = await check_vectors(self.url, local=local)
        if not self._vectors.on:  # a crash during the test ended the pool's connections too
            await self.engine.dispose()
        return self._vectors

    async def upgrade(self) -> list[Migration]:
        """Apply pending Alembic migrations; returns those applied, oldest first (none when the
        schema is current). Where pgvector does not run, the migrations make a stand-in for its
        type; where it runs again, the stand-in is replaced (:mod:`fable_core.db.vectors`)."""
        if self._vectors is None:
            await self.check_vectors()
        on = self.vectors.on
        async with self.engine.begin() as conn:
            await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK})
            if on:
                await update_extensions(conn)
            applied = await conn.run_sync(lambda sync: upgrade_to_head(sync, vectors=on))
            await adapt_schema(conn, on)
            return applied

    async def revision(self) -> str | None:
        """The migration the schema is at (None before the first)."""
        with self.translated():
            async with self.engine.connect() as conn:
                return await conn.run_sync(current_revision)

    @asynccontextmanager
    async def transaction(self, *, writer: int | None = None) -> AsyncIterator[AsyncSession]:
        """A session inside one transaction: committed on success, rolled back on any error.

        Driver errors leave as domain errors (:func:`~fable_core.db.errors.translate_db_error`),
        here, for every caller: a database that is down is ``Unavailable`` (503) whether a tool
        or a hand-written route asked. With a read replica, ``writer`` (the user a tool call
        writes for) is stamped as having written, in this transaction: their reads stay on the
        primary for a while (:mod:`fable_core.db.replica`)."""
        with self.translated():
            async with self.sessions() as session, session.begin():
                yield session
                if writer is not None and self.replica is not None:
                    await session.execute(STAMP, {"writer": writer})
            if writer is not None and self.replica is not None:
                self.replica.wrote(writer)
            for hook in self.on_commit:
                hook(session)

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[AsyncSession]:
        """A session that reads the whole database as of one moment (``REPEATABLE READ READ ONLY``):
        for a backup, whose tables read one after another under READ COMMITTED would each see a
        later state (versions of notes it does not hold, links from notes it missed). It writes
        nothing, takes no locks beyond a reader's and blocks no writer."""
        with self.translated():
            async with self.sessions() as session, session.begin():
                await session.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"))
                yield session

    def check_detached(self) -> None:
        """Unavailable when :data:`DETACHED` detached snapshots are open: what a download checks
        before it answers, so that it is refused with a status, not cut after one."""
        if self._detached_slots.locked():
            raise Unavailable(f"{DETACHED} exports are being read here at once: try again in a minute",
                              retry_after=60)

    @asynccontextmanager
    async def detached_snapshot(self) -> AsyncIterator[AsyncSession]:
        """A :meth:`snapshot` on a connection of its own, outside the pool: for a reader that
        holds its moment while a client downloads what it reads (an export), which must take
        none of the pool's connections (the calls of everyone else) for that long. At most
        :data:`DETACHED` at once per process (the server's connections are finite: one more is
        refused at once); one idle for :data:`DETACHED_IDLE` seconds (a stalled download) is
        ended by the server."""
        self.check_detached()
        if self._detached is None:
            self._detached = create_async_engine(self.url, poolclass=NullPool, connect_args={
                "server_settings": {"application_name": f"fable {os.getpid()} snapshot"}})
        async with self._detached_slots:
            with self.translated():
                async with AsyncSession(self._detached, expire_on_commit=False, autoflush=False) as session, \
                        session.begin():
                    await session.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"))
                    await session.execute(text(f"SET LOCAL idle_in_transaction_session_timeout = "
                                               f"{int(DETACHED_IDLE * 1000)}"))
                    yield session

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[AsyncSession]:
        """A session for calls that only read: no BEGIN and COMMIT round trips.

        Under PostgreSQL's READ COMMITTED every statement takes its own snapshot, in a
        transaction or not, so a reader sees exactly what it would inside one; it just skips
        two round trips. Anything it writes would commit statement by statement: writers use
        :meth:`transaction`.
        """
        with self.translated():
            async with self._reading() as session:
                yield session

    @asynccontextmanager
    async def replica_reading(self, user_id: int) -> AsyncIterator[AsyncSession]:
        """A session for a read-only tool call of ``user_id``'s: on the read replica when there
        is one and it may answer (not after their own recent write, not while it lags or is
        down: :class:`~fable_core.db.replica.Replica`), else on the primary, as :meth:`reading`.
        A failure of the replica's (not of the request's data) leaves as ``ReplicaFailed``: the
        dispatcher then runs a one-session read tool again on the primary."""
        if self.replica is None:
            async with self.reading() as session:
                yield session
            return
        with self.translated():
            replica_session = await self.replica.session(user_id)
        if replica_session is None:
            async with self.reading() as session:
                yield session
            return
        with self.translated():
            try:
                async with replica_session:
                    yield replica_session
            except (OSError, DBAPIError) as e:
                if self.replica.failed(e):
                    raise ReplicaFailed(f"the read replica failed: {type(e).__name__}") from e
                raise

    async def ping(self) -> None:
        """One round trip; Unavailable (saying why) when the server does not answer."""
        with self.translated():
            async with self.engine.connect() as conn:
                await conn.execute(text("SELECT 1"))

    async def close(self) -> None:
        if self.replica is not None:
            await self.replica.close()
        if self._detached is not None:
            await self._detached.dispose()
        await self.engine.dispose()


async def check_extensions(
    conn: AsyncConnection, required: dict[str, str] = REQUIRED_EXTENSIONS
) -> None:
    """Fail at startup, naming each extension the server cannot provide."""
    try:
        rows = await conn.execute(text("SELECT name FROM pg_available_extensions"))
    except OSError as e:  # pragma: no cover - connection refused is raised earlier
        raise Unavailable(f"cannot reach PostgreSQL: {e}") from e
    available = {row[0] for row in rows}
    missing = [f"{name} ({why})" for name, why in required.items() if name not in available]
    if missing:
        raise Unavailable(
            "PostgreSQL is missing required extension(s): " + ", ".join(missing)
            + ". Use a server with pgvector and pg_trgm (e.g. the pgvector/pgvector image), "
            "or unset DATABASE_URL to use Fable's embedded PostgreSQL.",
            missing=[name for name in required if name not in available],
        )


async def update_extensions(conn: AsyncConnection, names: tuple[str, ...] = tuple(REQUIRED_EXTENSIONS)) -> list[str]:
    """``ALTER EXTENSION ... UPDATE`` each of ``names`` installed at an older version than the
    server offers (a new embedded wheel, or a distribution's package upgrade): pgvector's SQL
    objects then match its library. Returns what was updated, as ``name old -> new``. A role
    that may not (an external server's) leaves them as they are, with a warning."""
    rows = (await conn.execute(text(
        "SELECT e.extname, e.extversion, a.default_version FROM pg_extension e "
        "JOIN pg_available_extensions a ON a.name = e.extname "
        "WHERE e.extname = ANY(:names) AND e.extversion <> a.default_version"), {"names": list(names)})).all()
    updated = []
    for name, old, new in rows:
        try:
            async with conn.begin_nested():
                await conn.execute(text(f'ALTER EXTENSION "{name}" UPDATE'))
        except DBAPIError as e:
            _log.warning("extension %s stays at %s (the server offers %s): %s", name, old, new,
                         str(e.orig).splitlines()[0] if e.orig else e)
            continue
        _log.info("extension %s updated from %s to %s", name, old, new)
        updated.append(f"{name} {old} -> {new}")
    return updated


def storage_description(settings: Settings) -> str:
    """Where this Fable's database is, for people: the embedded server's directory, or the
    ``DATABASE_URL`` without its password."""
    if not settings.database_url:
        return f"the embedded PostgreSQL in {settings.pg_data_dir}"
    try:
        return f"PostgreSQL at {make_url(settings.database_url).render_as_string(hide_password=True)}"
    except ArgumentError:
        return "PostgreSQL at DATABASE_URL"
