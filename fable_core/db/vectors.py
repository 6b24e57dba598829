"""Can this server's pgvector be trusted: a self-test, once per server, before any vector reaches it.

A pgvector built for another CPU (``-march=native`` on the build host: the earlier embedded
wheel's had AVX-512 in ``cosine_distance``) kills the PostgreSQL backend that first runs it
with SIGILL, and PostgreSQL then ends every connection of every process while it recovers. The
embedding worker used to retry the same note and take the database down again and again. So
before semantic features start, :func:`check_vectors` runs what they use (casts from text and
from ``real[]``, ``vector_norm``, the distance functions, an HNSW index built and then inserted
into, an index scan) at 384 and 768 dimensions, in a connection of its own with nothing else on
it, and checks the answers. If the backend dies or errors, semantic features stay off for this
server with the reason (:class:`VectorSupport`), and everything else runs as usual.

The test runs before the migrations, so it must not need them: where the extension is not
created yet (a new database) it creates it in a schema of its own inside the test's transaction,
which is rolled back. A build that cannot even be loaded on this CPU (the embedded wheel's, on a
CPU without AVX2) would crash ``CREATE EXTENSION`` itself; such a database gets a stand-in
``vector`` type instead (a domain over ``real[]``, :func:`create_vector_type`, which the
migrations call), so every table exists and everything but meaning works. When a later test
passes (another CPU, a portable build), :func:`adapt_schema` replaces the stand-in with the
extension: embeddings are derived, so the columns are made anew and the notes embedded again.

A backend crash restarts the whole server, so the verdict is recorded in ``vector_checks``
(this module's own table, made here like Alembic makes ``alembic_version``: it must exist before
the migrations) under the database's fingerprint (the server's version and system identifier, the database,
the pgvector version the server offers and, for the embedded server, the library's digest and
this CPU's flags): no process tests a fingerprint that failed again. The test runs under a session
advisory lock with a ``running`` row written first, so a row still ``running`` when the next
process takes the lock means the test never finished: its backend (or its process) died, and it
counts as failed. ``fable db check`` forgets the verdicts and tests again (after moving an
external server to another CPU, say).

Costs: one self-test is about 60 ms on a quiet machine; a process runs it once per server (the
verdict is remembered in the process), so a test suite's many runtimes pay it once.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import CursorResult, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine
from sqlalchemy.pool import NullPool

__all__ = ["DOC", "ON", "STAND_IN", "VectorSupport", "adapt_schema", "check_vectors", "create_vector_type",
           "forget_verdicts"]

DOC = "docs/configuration.md#semantic-search-and-the-cpu"
DIMS = (384, 768)
ROWS = 48  # per table: enough for HNSW to link several layers' neighbours
TEST_TIMEOUT = 60.0  # seconds: a slow, loaded or emulated machine still finishes
RECOVERY = 120.0  # seconds to wait for a server restarting after a crash
_LOCK = 0x0F_AB_1E_5E
_SCHEMA = "fable_vector_check"  # where the test creates the extension when the database has none
_TABLE = text(
    "CREATE TABLE IF NOT EXISTS vector_checks (fingerprint varchar(64) PRIMARY KEY,"
    " state varchar(10) NOT NULL CHECK (state IN ('running', 'passed', 'failed')),"
    " reason text NOT NULL DEFAULT '', checked_at timestamptz NOT NULL DEFAULT now())")
# The stand-in for pgvector's type where it cannot run: the vector columns exist (nothing is
# written to them while semantic features are off) and no index method is needed.
STAND_IN = "real[]"
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class VectorSupport:
    """Whether semantic features may use the database's vectors, and why not."""

    on: bool
    reason: str = ""  # for people: "semantic search is off: <reason>"

    def to_dict(self) -> dict[str, object]:
        return {"on": self.on, "reason": self.reason} if self.reason else {"on": self.on}


ON = VectorSupport(True)
_verdicts: dict[str, VectorSupport] = {}  # fingerprint -> verdict, in this process


async def check_vectors(url: str, *, local: str = "") -> VectorSupport:
    """The verdict on ``url``'s server: remembered in this process, else recorded in the
    database, else tested now. ``local`` adds what SQL cannot show (the embedded library and CPU)."""
    async with _connection(url) as conn:
        fingerprint = await _fingerprint(conn, local)
    if fingerprint in _verdicts:
        return _verdicts[fingerprint]
    verdict = await _judge(url, fingerprint)
    if not verdict.on:
        _log.warning("semantic search is off: %s", verdict.reason)
    _verdicts[fingerprint] = verdict
    return verdict


async def forget_verdicts(url: str) -> int:
    """Forget every recorded verdict on ``url``'s server (``fable db check``); how many."""
    _verdicts.clear()
    async with _connection(url) as conn:
        result = await conn.execute(text("DELETE FROM vector_checks"))
        await conn.commit()
        return cast("CursorResult[Any]", result).rowcount or 0


@asynccontextmanager
async def _connection(url: str) -> AsyncIterator[AsyncConnection]:
    """A connection of its own, never pooled: the test's may die with its backend."""
    engine = create_async_engine(url, poolclass=NullPool)
    try:
        async with engine.connect() as conn:
            yield conn
    finally:
        await engine.dispose()


async def _fingerprint(conn: AsyncConnection, local: str) -> str:
    parts = list((await conn.execute(text(
        "SELECT version(), current_database(),"
        " (SELECT default_version FROM pg_available_extensions WHERE name = 'vector')"))).one())
    try:  # the cluster's identity, where this role may read it
        parts.append(await conn.scalar(text("SELECT system_identifier FROM pg_control_system()")))
    except DBAPIError:
        await conn.rollback()
    return hashlib.sha256("\0".join(map(str, (*parts, local))).encode()).hexdigest()[:32]


async def _judge(url: str, fingerprint: str) -> VectorSupport:
    """A recorded verdict, else the test's (recorded). A lost connection (a crash: the test's,
    or another process's) waits for the server to recover and looks again."""
    deadline = asyncio.get_running_loop().time() + RECOVERY
    crash = ""
    while True:
        try:
            return await _judge_once(url, fingerprint, crash)
        except _Lost as e:
            crash = crash or str(e)
            _log.error("the vector extension's self-test lost its connection (%s); waiting for PostgreSQL", e)
            if asyncio.get_running_loop().time() > deadline:
                return VectorSupport(False, _crash_reason(crash) + f"; PostgreSQL did not come back within "
                                                                   f"{RECOVERY:g} s")
            await asyncio.sleep(0.5)


async def _judge_once(url: str, fingerprint: str, crash: str) -> VectorSupport:
    try:
        async with _connection(url) as lock:
            await lock.execution_options(isolation_level="AUTOCOMMIT")
            await lock.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _LOCK})
            await lock.execute(_TABLE)
            recorded = await _recorded(lock, fingerprint, crash)
            if recorded is not None:
                return recorded
            await _record(lock, fingerprint, "running", "")
            try:
                verdict = await _test(url)
            except TimeoutError:  # not a verdict: a loaded machine may finish next time
                await lock.execute(text("DELETE FROM vector_checks WHERE fingerprint = :f"), {"f": fingerprint})
                return VectorSupport(False, f"the vector extension's self-test did not finish within "
                                            f"{TEST_TIMEOUT:g} s; it runs again at the next start")
            await _record(lock, fingerprint, "passed" if verdict.on else "failed", verdict.reason)
            return verdict
    except (DBAPIError, OSError) as e:
        if isinstance(e, DBAPIError) and not _lost(e):
            raise
        raise _Lost(_first_line(e)) from e


async def _recorded(conn: AsyncConnection, fingerprint: str, crash: str) -> VectorSupport | None:
    """The recorded verdict (None: none yet). Read under the lock, a ``running`` row means its
    tester died before finishing: that counts as a crash."""
    row = (await conn.execute(text("SELECT state, reason FROM vector_checks WHERE fingerprint = :f"),
                              {"f": fingerprint})).one_or_none()
    if row is None:
        return None
    state, reason = row
    if state == "passed":
        return ON
    if state == "running":
        reason = _crash_reason(crash or "the backend or the process running it stopped before it finished")
        await _record(conn, fingerprint, "failed", reason)
    return VectorSupport(False, reason)


async def _record(conn: AsyncConnection, fingerprint: str, state: str, reason: str) -> None:
    await conn.execute(text(
        "INSERT INTO vector_checks (fingerprint, state, reason) VALUES (:f, :s, :r) "
        "ON CONFLICT (fingerprint) DO UPDATE SET state = excluded.state, reason = excluded.reason, "
        "checked_at = now()"), {"f": fingerprint, "s": state, "r": reason})


def _crash_reason(detail: str) -> str:
    _log.error("the vector extension's self-test crashed its backend: %s", detail)
    return ("the database's vector extension crashed in Fable's self-test (it was likely built for another "
            f"CPU than the database server's); see {DOC}")


class _Lost(Exception):
    """A connection was lost: its backend died (or the server restarts after another's crash)."""


class _Wrong(Exception):
    """An operation answered, wrongly."""


async def _extension_exists(conn: AsyncConnection) -> bool:
    return bool(await conn.scalar(text("SELECT 1 FROM pg_extension WHERE extname = 'vector'")))


async def _test(url: str) -> VectorSupport:
    """Run the vector operations Fable uses on a connection of their own; ON, or why not."""
    try:
        async with asyncio.timeout(TEST_TIMEOUT), _connection(url) as conn:
            if not await _extension_exists(conn):  # a new database: create it just for the test
                await conn.execute(text(f"CREATE SCHEMA {_SCHEMA}"))
                await conn.execute(text(f"CREATE EXTENSION vector SCHEMA {_SCHEMA}"))
                await conn.execute(text(f"SET LOCAL search_path = {_SCHEMA}, public"))
            for dims in DIMS:
                await _exercise(conn, dims)
            await conn.rollback()
    except (DBAPIError, OSError) as e:
        if not isinstance(e, DBAPIError) or _lost(e):
            raise _Lost(_first_line(e)) from e
        if getattr(e.orig, "sqlstate", None) == "42501" or "permission denied" in str(e.orig):
            _log.info("the vector self-test may not create the extension (%s): the migrations will say", e.orig)
            return ON  # not a verdict on the extension: this role may not create it
        return VectorSupport(False, f"the database's vector extension fails its self-test: {_first_line(e)}; "
                                    f"see {DOC}")
    except _Wrong as e:
        return VectorSupport(False, f"the database's vector extension gives wrong answers ({e}); see {DOC}")
    return ON


async def _exercise(conn: AsyncConnection, dims: int) -> None:
    rng = random.Random(dims)
    a = [rng.uniform(-1, 1) for _ in range(dims)]
    b = [rng.uniform(-1, 1) for _ in range(dims)]
    literal = "[" + ",".join(f"{v:.6f}" for v in a) + "]"
    a = [float(f"{v:.6f}") for v in a]
    norm, cosine, l2, inner = (await conn.execute(text(
        "SELECT vector_norm(CAST(:a AS vector)), CAST(:a AS vector) <=> CAST(:b AS real[])::vector,"
        " l2_distance(CAST(:a AS vector), CAST(:b AS real[])::vector),"
        " inner_product(l2_normalize(CAST(:a AS vector)), CAST(:b AS real[])::vector)"),
        {"a": literal, "b": b})).one()
    expected_norm = math.sqrt(sum(v * v for v in a))
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    expected_cosine = 1 - dot / (expected_norm * math.sqrt(sum(v * v for v in b)))
    expected_l2 = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b, strict=True)))
    for name, got, want in (("vector_norm", norm, expected_norm), ("cosine distance", cosine, expected_cosine),
                            ("l2_distance", l2, expected_l2), ("inner_product", inner, dot / expected_norm)):
        if not math.isclose(float(got), want, rel_tol=1e-3, abs_tol=1e-3):
            raise _Wrong(f"{name} at {dims} dimensions is {float(got):.4f}, not {want:.4f}")
    await _index(conn, dims, rng)


async def _index(conn: AsyncConnection, dims: int, rng: random.Random) -> None:
    """An HNSW index built over rows, then rows inserted into it, then an index scan that must
    find a row's own vector first."""
    table = f"fable_vector_check_{dims}"
    rows = [[rng.uniform(-1, 1) for _ in range(dims)] for _ in range(2 * ROWS)]
    await conn.execute(text(f"CREATE TEMP TABLE {table} (id int, v vector({dims})) ON COMMIT DROP"))
    insert = text(f"INSERT INTO {table} VALUES (:id, CAST(:v AS real[])::vector)")
    await conn.execute(insert, [{"id": i, "v": v} for i, v in enumerate(rows[:ROWS])])
    await conn.execute(text(f"CREATE INDEX ON {table} USING hnsw (v vector_cosine_ops)"))
    await conn.execute(insert, [{"id": i + ROWS, "v": v} for i, v in enumerate(rows[ROWS:])])
    await conn.execute(text("SET LOCAL enable_seqscan = off"))
    found = (await conn.execute(text(
        f"SELECT id FROM {table} ORDER BY v <=> CAST(:q AS real[])::vector LIMIT 3"), {"q": rows[-1]})).scalars().all()
    await conn.execute(text("SET LOCAL enable_seqscan = on"))
    if not found or found[0] != len(rows) - 1:
        raise _Wrong(f"an HNSW search at {dims} dimensions found {found}, not row {len(rows) - 1} first")


def create_vector_type(execute: Callable[[str], object], on: bool) -> None:
    """The ``vector`` type the migrations' columns use: pgvector's where it runs, else the stand-in."""
    if on:
        execute("CREATE EXTENSION IF NOT EXISTS vector")
    else:
        execute("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_type WHERE typname = 'vector') THEN "
                f"CREATE DOMAIN vector AS {STAND_IN}; END IF; END $$")


# The columns of pgvector's type, and what says they were embedded (reset with them)
_VECTOR_COLUMNS = (
    ("note_embeddings", "embedding vector NOT NULL", "DELETE FROM note_embeddings"),
    ("moments", "embedding vector", "UPDATE moments SET embedding_model = NULL"),
    ("feed_items", "embedding vector", "UPDATE feed_items SET embedding_model = NULL, dims = NULL"),
)


async def adapt_schema(conn: AsyncConnection, on: bool) -> bool:
    """Where the extension now runs but the database has the stand-in: make the vector columns
    anew with pgvector's type (their contents are derived: the worker embeds again). In the
    caller's transaction (the migration lock's). Whether anything changed."""
    if not on:
        return False
    stand_in = await conn.scalar(text(
        "SELECT 1 FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace "
        "WHERE t.typname = 'vector' AND t.typtype = 'd'"))
    if not stand_in:
        return False
    _log.warning("the vector extension runs now: replacing the stand-in vector type (embeddings are made again)")
    for table, _column, reset in _VECTOR_COLUMNS:
        await conn.execute(text(reset))
        await conn.execute(text(f"ALTER TABLE {table} DROP COLUMN embedding"))
    await conn.execute(text("DROP DOMAIN vector"))
    await conn.execute(text("CREATE EXTENSION vector"))
    for table, column, _ in _VECTOR_COLUMNS:
        await conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {column}"))
    await conn.execute(text(_HNSW_768))
    return True


_HNSW_768 = ("CREATE INDEX IF NOT EXISTS ix_note_embeddings_hnsw_768 ON note_embeddings "
             "USING hnsw ((embedding::vector(768)) vector_cosine_ops) WHERE dims = 768")


def _lost(e: DBAPIError) -> bool:
    """Whether the driver says the connection went away (the backend died under it)."""
    name = type(e.orig).__name__ if e.orig is not None else ""
    message = str(e.orig or e).lower()
    return ("ConnectionDoesNotExist" in name or "connection was closed" in message
            or "terminating connection" in message or "server closed the connection" in message
            or "connection is closed" in message)


def _first_line(e: BaseException) -> str:
    orig = getattr(e, "orig", None)
    return (str(orig or e).strip().splitlines() or [type(e).__name__])[0]
