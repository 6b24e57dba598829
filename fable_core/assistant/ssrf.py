"""The one SSRF guard every outbound fetch of a user-given URL goes through.

Only ``http``/``https``. The host is resolved and *every* address it resolves to must be public:
loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16 — cloud
metadata — and fe80::/10), shared (100.64/10), reserved, multicast and unspecified addresses are
refused, IPv4-mapped IPv6 (``::ffff:127.0.0.1``) is judged by its IPv4 address, and numeric
hosts in any form the C library accepts (``2130706433``, ``0x7f000001``, ``0177.0.0.1``,
``127.1``) are normalised first. The connection goes to the checked address (the Host header and
TLS SNI keep the name), so DNS cannot answer differently the second time. Redirects are followed
by hand, each hop checked again; bodies are capped in bytes and the whole fetch in time.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Container
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import httpx

from fable_core.errors import InvalidInput, Unavailable

__all__ = ["Blocked", "Fetched", "check_ip", "fetch", "resolve_public"]

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
MAX_BYTES = 1_000_000
TIMEOUT = 10.0
MAX_REDIRECTS = 5


class Blocked(InvalidInput):
    """Raised when a URL is not allowed to be fetched (scheme, or a non-public address)."""

    type = "blocked_url"


@dataclass(frozen=True, slots=True)
class Fetched:
    url: str
    status: int
    content_type: str
    text: str
    truncated: bool


def check_ip(ip: IP) -> None:
    """Raise Blocked unless ``ip`` is a public unicast address."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    bad = (ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_multicast
           or ip.is_reserved or ip.is_unspecified or not ip.is_global)
    if bad:
        raise Blocked(f"address {str(ip)!r} is not public; refusing to fetch it", address=str(ip))


def _literal_ip(host: str) -> IP | None:
    """``host`` as an IP address if it is one in any notation, else None."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))  # decimal, hex, octal, short forms
    except OSError:
        return None


async def resolve_public(host: str, port: int) -> IP:
    """The address to connect to: every address of ``host`` must be public."""
    literal = _literal_ip(host)
    if literal is not None:
        check_ip(literal)
        return literal
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise InvalidInput(f"cannot resolve host {host!r}: {e.strerror}", host=host) from e
    addresses = [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]
    for ip in addresses:
        check_ip(ip)
    if not addresses:
        raise InvalidInput(f"host {host!r} has no address", host=host)
    return addresses[0]


def _split(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise Blocked(f"only http and https URLs can be fetched, not {url[:100]!r}", url=url[:200])
    if not parts.hostname:
        raise Blocked(f"URL {url[:100]!r} has no host", url=url[:200])
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as e:
        raise Blocked(f"URL {url[:100]!r} has an invalid port", url=url[:200]) from e
    return parts.scheme, parts.hostname, port


async def _target(url: str, allow: Container[str]) -> tuple[str, dict[str, str], dict[str, object]]:
    """The URL to request (pointing at the checked address), its headers and extensions."""
    scheme, host, port = _split(url)
    if f"{host}:{port}" in allow:
        return url, {}, {}
    ip = await resolve_public(host, port)
    netloc = f"[{ip}]" if ip.version == 6 else str(ip)
    parts = urlsplit(url)
    direct = parts._replace(netloc=f"{netloc}:{port}").geturl()
    headers = {"Host": host if port in (80, 443) else f"{host}:{port}"}
    return direct, headers, ({"sni_hostname": host} if scheme == "https" else {})


async def fetch(
    url: str, *, max_bytes: int = MAX_BYTES, timeout: float = TIMEOUT,
    max_redirects: int = MAX_REDIRECTS, allow_first_hop: Container[str] = (),
) -> Fetched:
    """GET ``url`` safely. ``allow_first_hop`` ("host:port" names) exempts only the first
    request from the address check; it exists for tests of the redirect check, nothing else."""
    try:
        async with asyncio.timeout(timeout), httpx.AsyncClient(follow_redirects=False, timeout=timeout) as http:
            allow = allow_first_hop
            for _ in range(max_redirects + 1):
                direct, headers, extensions = await _target(url, allow)
                allow = ()
                async with http.stream("GET", direct, headers=headers, extensions=extensions) as response:
                    if response.is_redirect and "location" in response.headers:
                        url = urljoin(url, response.headers["location"])
                        continue
                    return await _read(url, response, max_bytes)
            raise InvalidInput(f"more than {max_redirects} redirects fetching {url[:100]!r}", url=url[:200])
    except TimeoutError as e:
        raise Unavailable(f"fetching {url[:100]!r} took longer than {timeout:g} s", url=url[:200]) from e
    except httpx.HTTPError as e:
        raise Unavailable(f"could not fetch {url[:100]!r}: {e}", url=url[:200]) from e


async def _read(url: str, response: httpx.Response, max_bytes: int) -> Fetched:
    chunks: list[bytes] = []
    size, truncated = 0, False
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= max_bytes:
            truncated = True
            break
    raw = b"".join(chunks)[:max_bytes]
    return Fetched(url=url, status=response.status_code,
                   content_type=response.headers.get("content-type", ""),
                   text=raw.decode(response.encoding or "utf-8", errors="replace"), truncated=truncated)
