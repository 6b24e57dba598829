"""Which ``Host`` (and browser ``Origin``) values this Fable answers to: one policy for the whole
HTTP surface, REST, the web UI and ``/mcp`` alike.

A request naming another host is refused before any route runs. This is the defence against
DNS rebinding (a page on ``attacker.example`` whose name is made to resolve to 127.0.0.1 reaches
a loopback Fable with ``Host: attacker.example``), and it is what makes the Host of an admitted
request safe to put into a link: it was configured, not chosen by the client.

Admitted: the loopback names on any port; the host of ``FABLE_BASE_URL``; each
``FABLE_ALLOWED_HOSTS`` entry (``name`` exactly, ``name:*`` on any port or none); ``*`` admits
every Host (only for a proxy that checks Host itself). Names compare in any case.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlsplit

from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from fable_core.config import Settings

__all__ = ["AllowedHosts", "HostPolicy"]

_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def _forms(host: str) -> list[str]:
    """The Host values a configured name admits: itself, and for ``name:*`` the bare name too
    (behind a TLS proxy there is no port)."""
    host = host.strip().lower()
    return [host.removesuffix(":*"), host] if host.endswith(":*") else [host]


class HostPolicy:
    """The allowed hosts and origins of one Fable, read once from its settings."""

    def __init__(self, settings: Settings) -> None:
        self.any_host = "*" in settings.fable_allowed_hosts
        hosts = [h for name in _LOOPBACK for h in _forms(f"{name}:*")]
        origins = [f"http://{h}" for h in hosts]
        if settings.fable_base_url:
            parts = urlsplit(settings.fable_base_url)
            hosts += _forms(parts.netloc)
            origins += [f"{parts.scheme}://{h}" for h in _forms(parts.netloc)]
        for name in settings.fable_allowed_hosts:
            if name != "*":
                forms = _forms(name)
                hosts += forms
                origins += [f"{scheme}://{h}" for scheme in ("https", "http") for h in forms]
        self.hosts = tuple(dict.fromkeys(hosts))
        self.origins = tuple(dict.fromkeys(origins))
        self._host = _matcher(self.hosts)
        self._origin = _matcher(self.origins)

    def allows_host(self, host: str | None) -> bool:
        return self.any_host or (host is not None and self._host.fullmatch(host.lower()) is not None)

    def allows_origin(self, origin: str) -> bool:
        return self.any_host or self._origin.fullmatch(origin.lower()) is not None

    def transport_settings(self) -> TransportSecuritySettings:
        """The same policy in the MCP SDK's terms, for its own check on ``/mcp``."""
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=not self.any_host,
            allowed_hosts=list(self.hosts), allowed_origins=list(self.origins),
        )

    def origin_regex(self) -> str:
        """The allowed origins as one regular expression (for CORS)."""
        return _pattern(self.origins) if not self.any_host else r".*"


def _pattern(names: tuple[str, ...]) -> str:
    return "|".join(re.escape(n.removesuffix(":*")) + (r"(:\d+)?" if n.endswith(":*") else "") for n in names)


def _matcher(names: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(_pattern(names))


class AllowedHosts:
    """ASGI middleware: a request whose Host the policy does not admit gets 421 and goes no
    further (no route, no authentication, no database)."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = Headers(scope=scope).get("host")
        if self.policy.allows_host(host):
            await self.app(scope, receive, send)
            return
        body = json.dumps({"error": {
            "type": "misdirected_request",
            "message": f"this server does not answer to the host {host!r}; if it should, add the "
                       "name to FABLE_ALLOWED_HOSTS (or set FABLE_BASE_URL)",
            "details": {"host": host},
        }}).encode()
        await send({"type": "http.response.start", "status": 421, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        ]})
        await send({"type": "http.response.body", "body": body})
