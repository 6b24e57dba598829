"""``fable serve``: open Fable on the configured database and run the app under uvicorn.

On first start, with no accounts yet, it prints where to create the first one (who becomes
the admin).
"""

from __future__ import annotations

import ipaddress
import sys

import uvicorn
from starlette.types import ASGIApp

from fable_core.accounts import count_users
from fable_core.config import Settings, load_settings
from fable_core.runtime import Fable
from fable_web.app import create_app
from fable_web.protocol import HeaderTimeoutProtocol

__all__ = ["serve", "uvicorn_config"]


def uvicorn_config(app: ASGIApp, host: str, port: int, settings: Settings | None = None,
                   **options: object) -> uvicorn.Config:
    """uvicorn with the fast parts (httptools, uvloop where available, no access log) and
    bounds against slow or many clients: a deadline for request headers
    (:mod:`fable_web.protocol`) and at most ``fable_max_connections`` connections or requests
    at once (uvicorn answers 503 beyond). ``settings`` absent: the defaults."""
    settings = settings or Settings()
    loop = "uvloop" if sys.platform != "win32" else "asyncio"
    return uvicorn.Config(
        app, host=host, port=port, http=HeaderTimeoutProtocol.with_timeout(settings.fable_header_timeout),
        loop=loop, access_log=False, proxy_headers=False, server_header=False,
        limit_concurrency=settings.fable_max_connections, **options,  # type: ignore[arg-type]
    )


async def _announce_first_user(fable: Fable, url: str) -> None:
    async with fable.db.reading() as session:
        users = await count_users(session)
    if not users:
        print(f"No accounts yet: open {url}/register to create the first one (it becomes the admin).",
              file=sys.stderr, flush=True)


def _with_bind_address(settings: Settings, host: str) -> Settings:
    """Admit the address ``fable serve`` listens on as a Host (people open http://192.168.1.5:8000
    when it listens on 192.168.1.5); a wildcard address names no host, so say what to set."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:  # a name: the operator chose it
        return settings.model_copy(update={"fable_allowed_hosts": [*settings.fable_allowed_hosts, f"{host}:*"]})
    if address.is_unspecified:
        if not (settings.fable_base_url or settings.fable_allowed_hosts):
            print(f"Listening on every interface ({host}): requests are answered only for localhost "
                  "until FABLE_BASE_URL or FABLE_ALLOWED_HOSTS names the host people use.",
                  file=sys.stderr, flush=True)
        return settings
    name = f"[{address}]" if address.version == 6 else str(address)
    return settings.model_copy(update={"fable_allowed_hosts": [*settings.fable_allowed_hosts, f"{name}:*"]})


async def serve(host: str | None = None, port: int | None = None, settings: Settings | None = None) -> int:
    """Run until interrupted; returns the exit status."""
    settings = settings or load_settings()
    host = host or settings.fable_host
    port = port or settings.fable_port
    settings = _with_bind_address(settings, host)
    fable = await Fable.open(settings)
    try:
        display = f"[{host}]" if ":" in host else host
        url = settings.fable_base_url or f"http://{display}:{port}"
        await _announce_first_user(fable, url.rstrip("/"))
        print(f"Fable is serving on http://{display}:{port} (REST /api, MCP /mcp)", file=sys.stderr,
              flush=True)
        config = uvicorn_config(create_app(fable), host, port, settings, log_level="warning")
        server = uvicorn.Server(config)
        await server.serve()
    finally:
        await fable.close()
    return 0
