"""The server side of the HTTP benchmarks: the app under test runs in processes of its own.

A benchmark starts them with :func:`start_servers`, which runs this module
(``python -m bench.harness.serving APP PORT DATABASE_URL [DATA_DIR]``, ``APP`` one of
:data:`APPS`); :func:`serve_in_process` then opens Fable on that database and serves the app
under uvicorn as ``fable serve`` runs it (httptools, uvloop, no access log). Several processes
can share one port (SO_REUSEPORT), as stateless replicas would.
"""

from __future__ import annotations

import importlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from fable_core.config import load_settings
from fable_core.runtime import Fable

__all__ = ["APPS", "free_port", "serve_in_process", "start_servers", "stop"]

AppFactory = Callable[[Fable], Any]
APPS = {"web": "fable_web.app", "mcp": "fable_mcp.http"}  # each module's create_app(fable) is served


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_in_process(database_url: str, port: int, make_app: AppFactory, data_dir: Path | None = None) -> None:
    """Serve ``make_app(fable)`` on 127.0.0.1:``port`` until terminated (its data dir the
    system's temporary directory unless given: the images bench serves files from its own)."""
    import uvloop

    uvloop.run(_serve(database_url, port, make_app, data_dir or Path(tempfile.gettempdir())))


async def _serve(database_url: str, port: int, make_app: AppFactory, data_dir: Path) -> None:
    import uvicorn

    from fable_web.server import uvicorn_config

    # the environment is not read (a bench measures defaults), but for the limit the shed bench varies
    settings = load_settings({}, database_url=database_url, llm_provider="none", fable_secret_key="bench-secret",
                             fable_data_dir=data_dir, fable_max_requests=int(os.environ.get("FABLE_MAX_REQUESTS", "0")))
    fable = await Fable.open(settings, migrate=False)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    try:
        config = uvicorn_config(make_app(fable), "127.0.0.1", port, log_level="warning")
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        await fable.close()


def start_servers(app: str, database_url: str, port: int, ready_path: str,
                  count: int = 1, data_dir: Path | None = None) -> list[subprocess.Popen[bytes]]:
    """Start ``count`` processes serving ``app`` (a key of :data:`APPS`) and wait until
    ``ready_path`` answers 200 (then a moment more, so that every process shares the port)."""
    if app not in APPS:
        raise ValueError(f"no app {app!r} to serve (one of {', '.join(APPS)})")
    procs = [subprocess.Popen([sys.executable, "-m", "bench.harness.serving", app, str(port), database_url,
                               *([str(data_dir)] if data_dir else [])]) for _ in range(count)]
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}{ready_path}", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            stop(procs)
            raise SystemExit(f"the benchmark's {app} server did not start")
        time.sleep(0.2)
    if count > 1:
        time.sleep(2)
    return procs


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(30)


def main(argv: list[str]) -> None:
    """``APP PORT DATABASE_URL [DATA_DIR]``: serve until terminated."""
    app, port, database_url, *data_dir = argv
    make_app = importlib.import_module(APPS[app]).create_app
    serve_in_process(database_url, int(port), make_app, Path(data_dir[0]) if data_dir else None)


if __name__ == "__main__":
    main(sys.argv[1:])
