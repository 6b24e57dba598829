"""``fable serve``: open Fable on the configured database and run the app under uvicorn.

It says where the data is, takes its port before anything else (so a port in use is reported
at once, before the database starts), then opens Fable and says where it serves. On first
start, with no accounts yet, it prints the link to the form that creates the first one (who
becomes the admin).
"""

from __future__ import annotations

import errno
import ipaddress
import socket
import sys

import uvicorn
from starlette.types import ASGIApp

from fable_core.config import Settings, load_settings
from fable_core.db.database import storage_description
from fable_core.errors import Unavailable
from fable_core.identity.accounts import count_users
from fable_core.runtime import Fable
from fable_web.app import create_app
from fable_web.drain import Drain, DrainingServer
from fable_web.protocol import HeaderTimeoutProtocol

__all__ = ["serve", "uvicorn_config"]


def uvicorn_config(app: ASGIApp, host: str, port: int, settings: Settings | None = None,
                   **options: object) -> uvicorn.Config:
    """uvicorn with the fast parts (httptools, uvloop where available, no access log) and
    bounds against slow or many clients: a deadline for request headers
    (:mod:`fable_web.protocol`) and at most ``fable_max_connections`` connections or requests
    at once (uvicorn answers 503 beyond), and ``fable_shutdown_timeout`` for what is in flight
    when it is told to stop. ``settings`` absent: the defaults."""
    settings = settings or Settings()
    loop = "uvloop" if sys.platform != "win32" else "asyncio"
    return uvicorn.Config(
        app, host=host, port=port, http=HeaderTimeoutProtocol.with_timeout(settings.fable_header_timeout),
        loop=loop, access_log=False, proxy_headers=False, server_header=False,
        limit_concurrency=settings.fable_max_connections,
        **({"timeout_graceful_shutdown": settings.fable_shutdown_timeout} | options),  # type: ignore[arg-type]
    )


async def _announce_first_user(fable: Fable, url: str) -> None:
    async with fable.db.reading() as session:
        users = await count_users(session)
    if not users:
        print(f"No accounts yet: open {url}/register to create the first one (it becomes the admin).",
              file=sys.stderr, flush=True)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything else starts; Unavailable saying why not (a
    port in use, an address this machine does not have)."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror as e:
        raise Unavailable(f"cannot listen on {host}:{port}: {e.strerror}", host=host) from e
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise Unavailable(f"port {port} on {host} is in use (another Fable?): stop it, or pick another port "
                              "with --port or FABLE_PORT", port=port) from e
        raise Unavailable(f"cannot listen on {host}:{port}: {e.strerror}", host=host, port=port) from e
    sock.set_inheritable(True)
    return sock


def _wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def _local_url(host: str, port: int) -> str:
    """The URL to open on this machine: a wildcard address is no host to open (and not one Fable
    answers to), so its loopback stands in."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return f"http://{host}:{port}"
    if address.is_unspecified:
        address = ipaddress.ip_address("::1" if address.version == 6 else "127.0.0.1")
    return f"http://[{address}]:{port}" if address.version == 6 else f"http://{address}:{port}"


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
    _say(f"Fable data directory: {settings.fable_data_dir} (database: {storage_description(settings)})")
    sock = _listen(host, port)
    try:
        settings = _with_bind_address(settings, host)
        fable = await Fable.open(settings, jobs=True)  # the process that runs jobs
        try:
            url = _local_url(host, port)
            app = create_app(fable)  # a bad setting it reads (FABLE_MCP_TOOLSETS) is said before "serving"
            await _announce_first_user(fable, (settings.fable_base_url or url).rstrip("/"))
            bound = f"; listening on {host} port {port}" if _wildcard(host) else ""
            _say(f"Fable is serving on {url} (web UI /, REST /api, MCP /mcp{bound})")
            drain = Drain(app, on_drain=app.state.on_drain)  # SIGTERM: held streams end, the rest finishes
            config = uvicorn_config(drain, host, port, settings, log_level="warning")
            await DrainingServer(config, drain).serve(sockets=[sock])
        finally:
            await fable.close()
    finally:
        sock.close()
    return 0
