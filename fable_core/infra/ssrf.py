"""The one SSRF guard every outbound fetch of a user-given URL goes through.

Only ``http``/``https``. The host is resolved and *every* address it resolves to must be public:
loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16 — cloud
metadata — and fe80::/10), shared (100.64/10), reserved, multicast and unspecified addresses are
refused, and numeric hosts in any form the C library accepts (``2130706433``, ``0x7f000001``,
``0177.0.0.1``, ``127.1``) are normalised first.

An IPv6 address that carries an IPv4 one is judged by the IPv4 address, because that is where the
packet ends up: IPv4-mapped ``::ffff:a.b.c.d``, 6to4 ``2002:AABB:CCDD::/48`` and NAT64
``64:ff9b::a.b.c.d``. So ``2002:7f00:1::`` is refused as 127.0.0.1, while 6to4/NAT64 of a public
address (``64:ff9b::808:808``) is allowed: on an IPv6-only host behind DNS64 every IPv4-only site
resolves to such an address, and the relay or translator only forwards to the embedded address,
which passes the same check a direct IPv4 target would. The other transition forms are refused by
``ipaddress``'s own tables, whatever they embed (the tests pin this): Teredo 2001::/32 is private,
local-use NAT64 64:ff9b:1::/48, IPv4-compatible ``::a.b.c.d`` and SIIT ``::ffff:0:a.b.c.d`` lie in
the reserved ::/8. (Network-specific NAT64 prefixes look like any global address; only the
operator of such a network can refuse them.)

A URL that cannot be parsed (bad brackets or port, a host that is not valid IDNA, a character the
HTTP client refuses), first hop or redirect, is ``Blocked``: no ``ValueError`` escapes. The
connection goes to the checked address (the Host header and TLS SNI keep the name), so DNS cannot
answer differently the second time. Redirects are followed by hand, each hop checked again; bodies
are capped in bytes and the whole fetch in time. An operator may let named ``host:port`` pairs
through every hop of a fetch (an intranet wiki or feed; tests' fake web sites on 127.0.0.1:
``FABLE_FETCH_ALLOW_HOSTS``, passed as ``allow``).

:func:`post` sends to a user-given endpoint (a Web Push service) the same way: the address is
checked and connected to as checked, no redirect is followed, the answer's body is capped and
the whole request bounded in time. An operator may let named ``host:port`` pairs through
(tests run push services on 127.0.0.1: ``FABLE_PUSH_ALLOW_HOSTS``); nothing else is exempt.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from urllib.parse import SplitResult, urljoin, urlsplit

import httpx

from fable_core.errors import InvalidInput, Unavailable
from fable_core.infra.tls import tls_context

__all__ = ["Blocked", "Fetched", "Posted", "allowed_by", "check_ip", "check_url", "fetch", "post", "resolve_public"]

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
MAX_BYTES = 1_000_000
TIMEOUT = 10.0
MAX_REDIRECTS = 5
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # the well-known prefix; 64:ff9b:1::/48 is reserved


class Blocked(InvalidInput):
    """Raised when a URL is not allowed to be fetched: its scheme, a non-public address, or a URL
    (or redirect Location) that cannot be parsed."""

    type = "blocked_url"


@dataclass(frozen=True, slots=True)
class Fetched:
    """What a GET answered: ``content`` is the body's bytes (at most ``max_bytes`` of them;
    ``truncated`` if there were more), ``headers`` the response's, names in lower case."""

    url: str
    status: int
    content_type: str
    content: bytes
    truncated: bool
    encoding: str = "utf-8"
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.content.decode(self.encoding, errors="replace")


@dataclass(frozen=True, slots=True)
class Posted:
    status: int
    text: str


def check_ip(ip: IP) -> None:
    """Raise Blocked unless ``ip`` is a public unicast address (an IPv6 address embedding an
    IPv4 one must embed a public one: see the module docstring)."""
    embedded = _embedded_ipv4(ip) if isinstance(ip, ipaddress.IPv6Address) else None
    if embedded is None and not _public(ip):
        raise Blocked(f"address {str(ip)!r} is not public; refusing to fetch it", address=str(ip))
    if embedded is not None and not _public(embedded):
        raise Blocked(f"address {str(ip)!r} embeds {str(embedded)!r}, which is not public; "
                      "refusing to fetch it", address=str(ip))


def allowed_by(refused: Blocked, name: str, setting: str) -> Blocked:
    """``refused`` saying how an operator allows the address after all: ``name`` ("host:port")
    in ``setting`` (a fetch's refusal is often a home server on the local network)."""
    return Blocked(f"{refused.message}; to allow it, an administrator adds {name} to {setting}",
                   **{**refused.details, "setting": setting})


def _public(ip: IP) -> bool:
    """Whether every one of the library's tables calls ``ip`` public unicast (they overlap and
    disagree at the edges: 3.11 calls ``ff0e::1`` global and ``64:ff9b:1::1`` only reserved)."""
    return not (ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_multicast
                or ip.is_reserved or ip.is_unspecified or not ip.is_global)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a packet to ``ip`` is delivered to, for the forms that embed one.

    The library says ``is_global`` of 6to4 (3.11) and ``is_reserved`` of all of 64:ff9b::/96,
    neither of which is the question: where does the packet go."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)
    return None


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
    # an IPv4 or IPv6 sockaddr starts with the address as text; str() tells the type checker so
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    for ip in addresses:
        check_ip(ip)
    if not addresses:
        raise InvalidInput(f"host {host!r} has no address", host=host)
    return addresses[0]


def _split(url: str) -> tuple[SplitResult, str, int]:
    """``url``'s parts, host in ASCII (IDNA) and port; unparsable or not http(s): Blocked."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").encode("idna").decode("ascii")
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as e:  # UnicodeError (IDNA) is one too
        raise _unparsable(url, e) from e
    if parts.scheme not in ("http", "https"):
        raise Blocked(f"only http and https URLs can be fetched, not {url[:100]!r}", url=url[:200])
    if not host:
        raise Blocked(f"URL {url[:100]!r} has no host", url=url[:200])
    return parts, host, port


def check_url(url: str, allow: Container[str] = (), setting: str = "FABLE_FETCH_ALLOW_HOSTS") -> None:
    """Raise Blocked unless ``url`` is an http(s) URL with a host, and a literal address in it is
    public (names are judged when they are resolved, at each request). For checking a URL when
    it is given, before it is stored; a refused address names ``setting``, which would allow it."""
    _, host, port = _split(url)
    literal = _literal_ip(host)
    if literal is not None and f"{host}:{port}" not in allow:
        try:
            check_ip(literal)
        except Blocked as e:
            raise allowed_by(e, f"{host}:{port}", setting) from e


def _unparsable(url: str, error: Exception) -> Blocked:
    """The one message for a URL nobody should guess the meaning of."""
    return Blocked(f"URL {url[:100]!r} cannot be parsed ({error}); refusing to fetch it", url=url[:200])


def _next_hop(url: str, location: str) -> str:
    """Where a redirect from ``url`` to ``location`` leads (``urljoin`` raises on bad brackets)."""
    try:
        return urljoin(url, location)
    except ValueError as e:
        raise _unparsable(location, e) from e


async def _check_location(response: httpx.Response) -> None:
    """A response hook: httpx parses a redirect's Location before it hands the response back,
    and calls one it cannot parse a protocol error; judge it first, so it is Blocked instead."""
    location = response.headers.get("location")
    if not response.is_redirect or location is None:
        return
    _next_hop(str(response.request.url), location)
    try:
        httpx.URL(location)
    except httpx.InvalidURL as e:
        raise _unparsable(location, e) from e


async def _target(url: str, allow: Container[str], setting: str) -> tuple[str, dict[str, str], dict[str, object]]:
    """The URL to request (pointing at the checked address), its headers and extensions; a
    refused address names ``setting``, the operator's list that would exempt it."""
    parts, host, port = _split(url)
    if f"{host}:{port}" in allow:
        return url, {}, {}
    try:
        ip = await resolve_public(host, port)
    except Blocked as e:
        raise allowed_by(e, f"{host}:{port}", setting) from e
    netloc = f"[{ip}]" if ip.version == 6 else str(ip)
    direct = parts._replace(netloc=f"{netloc}:{port}").geturl()
    headers = {"Host": host if port in (80, 443) else f"{host}:{port}"}
    return direct, headers, ({"sni_hostname": host} if parts.scheme == "https" else {})


async def fetch(
    url: str, *, max_bytes: int = MAX_BYTES, timeout: float = TIMEOUT,  # noqa: ASYNC109  fetch's own deadline
    max_redirects: int = MAX_REDIRECTS, allow: Container[str] = (), allow_first_hop: Container[str] = (),
    headers: Mapping[str, str] | None = None, allow_setting: str = "FABLE_FETCH_ALLOW_HOSTS",
) -> Fetched:
    """GET ``url`` safely, sending ``headers`` too (``If-None-Match``, ``Accept``).

    ``allow`` ("host:port" names, the operator's ``FABLE_FETCH_ALLOW_HOSTS``) exempts those
    hosts from the address check on every hop; ``allow_first_hop`` exempts only the first
    request, and exists for tests of the redirect check, nothing else."""
    try:
        async with asyncio.timeout(timeout), httpx.AsyncClient(
            follow_redirects=False, timeout=timeout, event_hooks={"response": [_check_location]}, verify=tls_context(),
        ) as http:
            first: Container[str] = allow_first_hop
            for _ in range(max_redirects + 1):
                direct, extra, extensions = await _target(url, _Either(allow, first), allow_setting)
                first = ()
                async with http.stream("GET", direct, headers={**(headers or {}), **extra},
                                       extensions=extensions) as response:
                    if response.is_redirect and "location" in response.headers:
                        url = _next_hop(url, response.headers["location"])
                        continue
                    return await _read(url, response, max_bytes)
            raise InvalidInput(f"more than {max_redirects} redirects fetching {url[:100]!r}", url=url[:200])
    except httpx.InvalidURL as e:  # not an HTTPError: the client refused to send it
        raise _unparsable(url, e) from e
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
    return Fetched(url=url, status=response.status_code, content_type=response.headers.get("content-type", ""),
                   content=raw, truncated=truncated, encoding=response.encoding or "utf-8",
                   headers={k.lower(): v for k, v in response.headers.items()})


@dataclass(frozen=True, slots=True)
class _Either:
    """A name is exempt if either set names it."""

    one: Container[str]
    other: Container[str]

    def __contains__(self, name: object) -> bool:
        return name in self.one or name in self.other


async def post(
    url: str, content: bytes, headers: dict[str, str], *, timeout: float = TIMEOUT,  # noqa: ASYNC109  its own deadline
    max_bytes: int = 10_000, allow: Container[str] = (), allow_setting: str = "FABLE_PUSH_ALLOW_HOSTS",
) -> Posted:
    """POST ``content`` to ``url`` safely: the address checked and connected to as checked
    (``allow``: "host:port" names the operator exempts), no redirect followed, at most
    ``max_bytes`` of the answer read, ``timeout`` seconds in all. Unavailable when it cannot be
    reached or takes longer."""
    try:
        async with asyncio.timeout(timeout), httpx.AsyncClient(follow_redirects=False, timeout=timeout,
                                                               verify=tls_context()) as http:
            direct, extra, extensions = await _target(url, allow, allow_setting)
            async with http.stream("POST", direct, content=content, headers={**headers, **extra},
                                   extensions=extensions) as response:
                read = await _read(url, response, max_bytes)
                return Posted(status=read.status, text=read.text)
    except httpx.InvalidURL as e:
        raise _unparsable(url, e) from e
    except TimeoutError as e:
        raise Unavailable(f"posting to {url[:100]!r} took longer than {timeout:g} s", url=url[:200]) from e
    except httpx.HTTPError as e:
        raise Unavailable(f"could not post to {url[:100]!r}: {e}", url=url[:200]) from e
