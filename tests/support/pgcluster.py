"""A throwaway cluster of the embedded wheel's PostgreSQL, natively or as if on another CPU:
for tests that crash or kill its backends (never the session's server). qemu's user-mode emulator
(``qemu-x86_64 -cpu MODEL``, Debian's ``qemu-user``) runs the postmaster and every backend it
forks, and a CPU model without AVX-512 (``Haswell``: AVX2) or without AVX at all (``Nehalem``:
x86-64-v2) makes an instruction the model lacks raise SIGILL, exactly as that CPU would. This
is how the suite sees what users on laptops see, on a machine that has AVX-512.

    with throwaway_server("Haswell") as server:   # initdb native, the server emulated
        server.url   # DATABASE_URL for Fable (a Unix socket)
        server.log() # PostgreSQL's log: "terminated by signal 4" after a crash
    with throwaway_server() as server:            # no emulation
        server.stop(); server.start()             # an outage: sessions end, the data stays

The cluster is initialised natively (initdb runs nothing vector-related) in a temporary
directory outside pytest's basetemp; ``fsync=off`` (a throwaway cluster).
"""

from __future__ import annotations

import os
import platform
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from fable_core.db.embedded import program, server_user

from .pace import scaled

__all__ = ["QEMU", "ThrowawayServer", "throwaway_server"]

QEMU = shutil.which("qemu-x86_64")
START_WITHIN = 120.0  # seconds: emulated start-up on a loaded machine


@dataclass
class ThrowawayServer:
    root: Path
    process: subprocess.Popen[bytes]
    cpu: str | None = None
    options: dict[str, object] = field(default_factory=dict)

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def url(self) -> str:
        return f"postgresql+asyncpg://postgres@/fable?host={self.root}"

    def log(self) -> str:
        return (self.root / "server.log").read_text(errors="replace")

    def stop(self) -> None:
        """Shut the server down as an operator would (``pg_ctl stop -m fast``: every session is
        ended, the data stays)."""
        os.killpg(self.process.pid, signal.SIGINT)
        self.process.wait(scaled(60))

    def start(self) -> None:
        """Start it again on its data; returns once it accepts connections."""
        self.process = _postgres(self.root, self.cpu, self.options)
        _wait_ready(self)


def _as_server_user(root: Path) -> dict[str, object]:
    user = server_user()
    if user is None:
        return {}
    account = pwd.getpwnam(user)  # made when the session's embedded server started
    root.chmod(0o755)
    for path in (root, *root.rglob("*")):
        os.chown(path, account.pw_uid, account.pw_gid)
    return {"user": user}


@contextmanager
def throwaway_server(cpu: str | None = None) -> Iterator[ThrowawayServer]:
    """A new cluster with an empty database ``fable``, its server run natively or emulated as
    ``cpu`` (a ``qemu-x86_64 -cpu`` model); stopped and removed at the end."""
    if cpu is not None and (platform.machine() != "x86_64" or QEMU is None):
        raise RuntimeError("emulating a CPU needs an x86-64 machine and qemu-x86_64 (Debian's qemu-user: "
                           "scripts/install-test-tools installs it)")
    root = Path(tempfile.mkdtemp(prefix="fable-throwaway-pg-"))
    try:
        (root / "data").mkdir(mode=0o700)
        options = _as_server_user(root)
        subprocess.run([str(program("initdb")), "-D", str(root / "data"), "-U", "postgres", "--auth=trust",
                        "--encoding=utf8", "--no-sync"], check=True, capture_output=True, timeout=scaled(120),
                       **options)
        server = ThrowawayServer(root, _postgres(root, cpu, options), cpu, options)
        try:
            _wait_ready(server)
            subprocess.run([str(program("psql")), "-h", str(root), "-U", "postgres", "-d", "postgres", "-qAt",
                            "-c", "CREATE DATABASE fable"], check=True, capture_output=True, timeout=scaled(60))
            yield server
        finally:
            _stop(server)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _postgres(root: Path, cpu: str | None, options: dict[str, object]) -> subprocess.Popen[bytes]:
    with (root / "server.log").open("ab") as log:
        emulator = [QEMU, "-cpu", cpu] if cpu is not None and QEMU is not None else []
        return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
            [*emulator, str(program("postgres")), "-D", str(root / "data"), "-k", str(root), "-h", "",
             "-c", "fsync=off", "-c", "max_connections=40"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, **options)


def _wait_ready(server: ThrowawayServer) -> None:
    within = scaled(START_WITHIN)
    deadline = time.monotonic() + within
    while subprocess.run([str(program("pg_isready")), "-h", str(server.root), "-q"], check=False).returncode != 0:
        if server.process.poll() is not None:
            raise RuntimeError(f"the throwaway server exited: {server.log()[-2000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the throwaway server did not start within {within:g} s: {server.log()[-2000:]}")
        time.sleep(0.2)


def _stop(server: ThrowawayServer) -> None:
    if server.process.poll() is None:
        os.killpg(server.process.pid, signal.SIGQUIT)  # immediate shutdown: a throwaway cluster
        try:
            server.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait(10)
