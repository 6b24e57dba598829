"""The bench's own embedded PostgreSQL: started fresh, always stopped, its processes listed.

``fable_core.db.embedded`` stops the server at interpreter exit, which is too late for a bench:
its data directory lives in a ``TemporaryDirectory`` that is removed first, and a server whose
``postmaster.pid`` is gone looks dead to the exit hook, so it kept running (the orphan of issue
23) until PostgreSQL noticed its lock file missing. :func:`embedded` stops the postmaster
itself, before the directory goes, on success, failure, Ctrl-C and (with
:func:`bench.harness.session.session`) SIGTERM; the exit hook then finds nothing left to stop.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psutil

__all__ = ["embedded", "postgres_pids", "postmaster", "stop_postmaster"]


@contextmanager
def embedded(pg_dir: Path) -> Iterator[str]:
    """Start (or join) the embedded server in ``pg_dir``; yields its URL; stops it on the way out."""
    from fable_core.db.embedded import start_embedded

    try:
        yield start_embedded(pg_dir)
    finally:
        stop_postmaster(pg_dir)


def postmaster(pg_dir: Path) -> psutil.Process | None:
    """The live postmaster of ``pg_dir``, from its ``postmaster.pid``; None when there is none."""
    try:
        process = psutil.Process(int((pg_dir / "postmaster.pid").read_text().split()[0]))
        if process.name() == "postgres" and process.status() != psutil.STATUS_ZOMBIE:
            return process
    except (OSError, ValueError, IndexError, psutil.Error):
        pass
    return None


def postgres_pids(pg_dir: Path | None) -> list[int]:
    """The postmaster of ``pg_dir`` and its children (backends, workers); none for an external
    server or a stopped one."""
    process = postmaster(pg_dir) if pg_dir is not None else None
    if process is None:
        return []
    try:
        return [process.pid, *(c.pid for c in process.children(recursive=True))]
    except psutil.Error:
        return []


def stop_postmaster(pg_dir: Path, timeout: float = 30) -> None:
    """Fast shutdown (SIGINT: backends are ended, nothing waits for clients); after ``timeout``
    seconds, kill it and whatever backends are left."""
    process = postmaster(pg_dir)
    if process is None:
        return
    try:
        children = process.children(recursive=True)
        process.send_signal(signal.SIGINT)
        process.wait(timeout)
    except psutil.TimeoutExpired:
        for p in [process, *children]:
            with suppress(psutil.Error):
                p.kill()
    except psutil.NoSuchProcess:
        pass
