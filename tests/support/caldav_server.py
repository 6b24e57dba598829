"""A real CalDAV server for tests: Radicale, run as a subprocess on 127.0.0.1 and a free port.

``radicale_server(root)`` starts it with plain-text htpasswd auth (``users``: name → password),
storage under ``root``, and owner-only rights; each user gets one calendar (``calendar``,
display name "<user>'s calendar"), made over the wire with the ``caldav`` client as any client
would. The server can be stopped and started again on the same port and storage (a CalDAV
server that goes down and comes back). ``client(user)`` gives a ``caldav.DAVClient`` for that
user, for tests that change the calendar behind Fable's back.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import caldav
import httpx

from .pace import scaled
from .servers import free_port

__all__ = ["Radicale", "radicale_running", "radicale_server"]

USERS = {"ana": "ana-secret", "ben": "ben-secret"}


@dataclass
class Radicale:
    root: Path
    port: int
    users: dict[str, str]
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def host(self) -> str:
        """``host:port``, as ``FABLE_PUSH_ALLOW_HOSTS`` names it."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}/"

    def calendar_url(self, user: str) -> str:
        return f"{self.url}{user}/calendar/"

    def start(self) -> None:
        assert self.process is None, "already running"
        config = self.root / "config"
        config.write_text(
            "[server]\n"
            f"hosts = 127.0.0.1:{self.port}\n"
            "[auth]\ntype = htpasswd\n"
            f"htpasswd_filename = {self.root / 'users'}\n"
            "htpasswd_encryption = plain\n"
            "delay = 0\n"
            "[rights]\ntype = owner_only\n"
            "[storage]\n"
            f"filesystem_folder = {self.root / 'collections'}\n"
            "[logging]\nlevel = warning\n"
            "[web]\ntype = none\n")
        (self.root / "users").write_text("".join(f"{u}:{p}\n" for u, p in self.users.items()))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "radicale", "--config", str(config)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        within = scaled(30)
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"radicale exited: {self.process.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
            try:
                httpx.get(self.url, timeout=1)
            except httpx.HTTPError:
                time.sleep(0.05)
            else:
                return
        self.stop()
        raise RuntimeError(f"radicale did not start within {within:g} s")

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()
        self.process = None

    @contextmanager
    def down(self) -> Iterator[None]:
        """The server stopped for the block, then started again on the same port and storage."""
        self.stop()
        try:
            yield
        finally:
            self.start()

    def client(self, user: str) -> caldav.DAVClient:
        return caldav.DAVClient(url=self.url, username=user, password=self.users[user], timeout=scaled(10))

    def calendar(self, user: str) -> caldav.Calendar:
        """``user``'s calendar, as the caldav client sees it."""
        return self.client(user).calendar(url=self.calendar_url(user))

    def make_calendars(self) -> None:
        for user in self.users:
            principal = self.client(user).principal()
            principal.make_calendar(name=f"{user}'s calendar", cal_id="calendar")


@contextmanager
def radicale_server(root: Path, users: dict[str, str] | None = None) -> Iterator[Radicale]:
    """Radicale running on a free port with one calendar per user, stopped when the block ends."""
    root.mkdir(parents=True, exist_ok=True)
    server = Radicale(root, free_port(), dict(users or USERS))
    server.start()
    try:
        server.make_calendars()
        yield server
    finally:
        server.stop()


@asynccontextmanager
async def radicale_running(root: Path, users: dict[str, str] | None = None) -> AsyncIterator[Radicale]:
    """:func:`radicale_server` for an async test: started and stopped on a worker thread (a fork of
    the test process and a wait for the port are no work for the event loop)."""
    manager = radicale_server(root, users)
    server = await asyncio.to_thread(manager.__enter__)
    try:
        yield server
    finally:
        await asyncio.to_thread(manager.__exit__, None, None, None)
