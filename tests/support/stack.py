"""Helpers for the stack tests: Caddy with deploy/Caddyfile, real ``fable serve`` replicas, and the
image's health check command."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from .pace import scaled
from .servers import FABLE, free_port

ROOT = Path(__file__).resolve().parents[2]
CADDY = ROOT / ".tools/caddy/bin/caddy"
CADDYFILE = ROOT / "deploy/Caddyfile"


def health_probe(port: int | str) -> str:
    """The Dockerfile's HEALTHCHECK (``python -c CODE``), its CODE asking ``port`` instead of 8000."""
    lines = [line.strip() for line in (ROOT / "Dockerfile").read_text().splitlines()]
    argv = json.loads(next(line for line in lines if line.startswith('CMD ["python"')).removeprefix("CMD "))
    assert argv[:2] == ["python", "-c"] and ":8000/" in argv[2]
    return str(argv[2]).replace(":8000/", f":{port}/")


def caddy_env(tmp: Path, **names: str) -> dict[str, str]:
    """Caddy's environment: its state under ``tmp`` (never the user's), and the Caddyfile's variables."""
    return {**os.environ, "HOME": str(tmp), "XDG_DATA_HOME": str(tmp / "data"),
            "XDG_CONFIG_HOME": str(tmp / "config"), **names}


@dataclass
class Replica:
    url: str
    proc: asyncio.subprocess.Process


@asynccontextmanager
async def replica(env: dict[str, str]) -> AsyncIterator[Replica]:
    """``fable serve`` on a free port with ``env``, answering; killed at the end if still up."""
    port = free_port()
    proc = await asyncio.create_subprocess_exec(FABLE, "serve", "--port", str(port), env={**os.environ, **env},
                                                stdin=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        await wait_healthy(url, proc)
        yield Replica(url, proc)
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


async def wait_healthy(url: str, proc: asyncio.subprocess.Process | None = None) -> None:
    async with httpx.AsyncClient(timeout=5) as client, asyncio.timeout(scaled(60)):
        while True:
            assert proc is None or proc.returncode is None, f"{url}: the process exited"
            try:
                if (await client.get(f"{url}/api/health")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.05)


@asynccontextmanager
async def caddy(caddy_bin: Path, tmp: Path, *upstreams: str) -> AsyncIterator[str]:
    """Caddy running deploy/Caddyfile as it is, its variables pointing at ``upstreams`` and a
    plain-HTTP site on a free port (the Caddyfile's FABLE_DOMAIN may name a scheme and port);
    yields the site's URL once it answers through the first replica, and its admin endpoint answers
    what compose.yaml's health check of the proxy asks."""
    port, admin = free_port(), free_port()
    env = caddy_env(tmp, FABLE_DOMAIN=f"http://127.0.0.1:{port}", CADDY_ADMIN=f"localhost:{admin}",
                    FABLE_UPSTREAM_1=upstreams[0], FABLE_UPSTREAM_2=upstreams[1])
    log = (tmp / "caddy.log").open("wb")
    proc = await asyncio.create_subprocess_exec(str(caddy_bin), "run", "--config", str(CADDYFILE), "--adapter",
                                                "caddyfile", env=env, stdin=asyncio.subprocess.DEVNULL,
                                                stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        await wait_healthy(url, proc)
        async with httpx.AsyncClient(timeout=scaled(5)) as client:
            assert (await client.get(f"http://localhost:{admin}/config/")).status_code == 200
        yield url
    finally:
        if proc.returncode is None:
            proc.terminate()
        await proc.wait()
        log.close()

