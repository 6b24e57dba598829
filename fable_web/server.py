"""``fable serve``: open Fable on the configured database and run the app under uvicorn.

On first start, with no accounts yet, it prints where to create the first one (who becomes
the admin).
"""

from __future__ import annotations

import sys

import uvicorn
from sqlalchemy import func, select

from fable_core.config import Settings, load_settings
from fable_core.db.models import User
from fable_core.runtime import Fable
from fable_web.app import create_app

__all__ = ["serve", "uvicorn_config"]


def uvicorn_config(app: object, host: str, port: int, **options: object) -> uvicorn.Config:
    """uvicorn with the fast parts: httptools, uvloop where available, no access log."""
    loop = "uvloop" if sys.platform != "win32" else "asyncio"
    return uvicorn.Config(
        app, host=host, port=port, http="httptools", loop=loop, access_log=False,
        proxy_headers=False, server_header=False, **options,  # type: ignore[arg-type]
    )


async def _announce_first_user(fable: Fable, url: str) -> None:
    async with fable.db.transaction() as session:
        users = await session.scalar(select(func.count(User.id)))
    if not users:
        print(f"No accounts yet: open {url}/register to create the first one (it becomes the admin).",
              file=sys.stderr, flush=True)


async def serve(host: str | None = None, port: int | None = None, settings: Settings | None = None) -> int:
    """Run until interrupted; returns the exit status."""
    settings = settings or load_settings()
    host = host or settings.fable_host
    port = port or settings.fable_port
    fable = await Fable.open(settings)
    try:
        display = f"[{host}]" if ":" in host else host
        url = settings.fable_base_url or f"http://{display}:{port}"
        await _announce_first_user(fable, url.rstrip("/"))
        print(f"Fable is serving on http://{display}:{port} (REST /api, MCP /mcp)", file=sys.stderr,
              flush=True)
        server = uvicorn.Server(uvicorn_config(create_app(fable), host, port, log_level="warning"))
        await server.serve()
    finally:
        await fable.close()
    return 0
