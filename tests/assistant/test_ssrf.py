"""The SSRF guard refuses every non-public target, in every spelling, after DNS and after
redirects; it caps size and time. Local test servers stand in for the outside world: the
first hop to them is allowed explicitly (a test-only parameter), everything after is checked."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route
from support.servers import serve_in_thread

from fable_core.assistant.context import ContextPack, add_urls, find_urls
from fable_core.assistant.providers.base import NoProvider
from fable_core.errors import InvalidInput, Unavailable
from fable_core.infra import ssrf

PAYLOADS = Path(__file__).with_name("ssrf_payloads.txt")


@pytest.mark.parametrize("url", [
    "http://127.0.0.1/",
    "http://[::1]/",
    "http://10.0.0.5/",
    "http://10.255.255.255:8080/x",
    "http://172.16.3.4/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://2130706433/",            # 127.0.0.1 in decimal
    "http://0x7f000001/",            # in hex
    "http://0177.0.0.1/",            # in octal
    "http://127.1/",                 # short form
    "http://[::ffff:127.0.0.1]/",    # IPv4-mapped IPv6
    "http://[::ffff:a9fe:a9fe]/",    # 169.254.169.254, mapped, in hex
    "http://0.0.0.0/",
    "http://100.64.0.1/",            # shared address space
    "http://224.0.0.1/",             # multicast
    "http://[fe80::1]/",
    "http://[fd00::1]/",
    "http://localhost:9/",           # a name that resolves to loopback
])
async def test_non_public_targets_are_refused(url: str) -> None:
    with pytest.raises(ssrf.Blocked, match="not public"):
        await ssrf.fetch(url)


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/", "gopher://x/", "javascript:alert(1)"])
async def test_only_http_and_https(url: str) -> None:
    with pytest.raises(ssrf.Blocked, match="only http and https"):
        await ssrf.fetch(url)


def payloads() -> list[str]:
    """The URLs of the payload file: the first word of each line not starting with ``#``."""
    lines = PAYLOADS.read_text(encoding="utf-8").splitlines()
    return [line.split()[0] for line in lines if line.strip() and not line.lstrip().startswith("#")]


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A socket listening on 127.0.0.1 that never accepts: a connection to it stays queued."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.setblocking(False)
        yield sock


def connections(sock: socket.socket) -> int:
    """How many connections ``sock`` has queued (accepting and closing each)."""
    count = 0
    while True:
        try:
            conn, _ = sock.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1


@pytest.mark.parametrize("payload", payloads())
async def test_every_payload_is_refused_before_connecting(payload: str, listener: socket.socket) -> None:
    url = payload.replace("{port}", str(listener.getsockname()[1]))
    with pytest.raises(InvalidInput) as refused:
        await ssrf.fetch(url, timeout=5)
    error = refused.value
    assert type(error) is ssrf.Blocked or "cannot resolve" in error.message, error
    assert connections(listener) == 0


@pytest.mark.parametrize(("address", "embedded"), [
    ("2002:7f00:1::", "127.0.0.1"),          # 6to4
    ("2002:a9fe:a9fe::1", "169.254.169.254"),
    ("64:ff9b::7f00:1", "127.0.0.1"),        # NAT64, well-known prefix
    ("64:ff9b::a9fe:a9fe", "169.254.169.254"),
    ("::ffff:10.1.2.3", "10.1.2.3"),         # IPv4-mapped
])
def test_an_embedded_ipv4_address_is_judged(address: str, embedded: str) -> None:
    with pytest.raises(ssrf.Blocked, match=f"embeds '{embedded}', which is not public"):
        ssrf.check_ip(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", [
    "2002:808:808::", "2002:808:808:1::1", "64:ff9b::808:808", "64:ff9b::1.1.1.1",
])
def test_6to4_and_nat64_of_a_public_ipv4_are_allowed(address: str) -> None:
    ssrf.check_ip(ipaddress.ip_address(address))  # the translator only reaches the public address


@pytest.mark.parametrize("address", [
    "2001:0:808:808::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo
    "64:ff9b:1::808:808",                                           # local-use NAT64
    "::8.8.8.8", "::1.1.1.1",                                       # IPv4-compatible
])
def test_teredo_local_nat64_and_ipv4_compatible_are_refused_whatever_they_embed(address: str) -> None:
    with pytest.raises(ssrf.Blocked, match="not public"):
        ssrf.check_ip(ipaddress.ip_address(address))


@pytest.mark.parametrize("url", [
    "http://[::1", "http://[127.0.0.1]/", "http://127.0.0.1:x/",
    "http://a\u2100b.example/",  # not the same host once NFKC-normalised
    "http://\u00e4..example/",    # not IDNA
])
async def test_malformed_urls_are_blocked_not_a_value_error(url: str) -> None:
    with pytest.raises(ssrf.Blocked, match="cannot be parsed"):
        await ssrf.fetch(url)


async def test_a_hostname_resolving_to_a_private_address_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.getaddrinfo

    def fake_dns(host, *args, **kwargs):
        if host == "intranet.example.com":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.1.2.3", 80)),
                    (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", 80))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake_dns)
    with pytest.raises(ssrf.Blocked, match=r"10\.1\.2\.3"):
        await ssrf.fetch("http://intranet.example.com/")


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    """A local 'outside' site with redirects, a big page and a slow page."""

    async def page(_: Request) -> Response:
        return PlainTextResponse("hello from the page")

    async def to(request: Request) -> Response:
        return RedirectResponse(request.query_params["url"], status_code=302)

    async def big(_: Request) -> Response:
        return PlainTextResponse("x" * 3_000_000)

    async def slow(_: Request) -> Response:
        async def trickle():
            for _ in range(50):
                await asyncio.sleep(0.1)
                yield b"."
        return StreamingResponse(trickle())

    app = Starlette(routes=[Route("/page", page), Route("/to", to), Route("/big", big), Route("/slow", slow)])
    with serve_in_thread(app) as url:
        yield url


def hop(url: str) -> tuple[str]:
    return (url.removeprefix("http://"),)


async def test_the_allowed_first_hop_is_fetched(site: str) -> None:
    page = await ssrf.fetch(f"{site}/page", allow_first_hop=hop(site))
    assert (page.status, page.text, page.truncated) == (200, "hello from the page", False)


@pytest.mark.parametrize("target", [
    "http://169.254.169.254/latest/meta-data/", "http://127.0.0.1:{port}/page", "http://localhost:{port}/page",
    "http://0x7f000001:{port}/page", "http://[::ffff:127.0.0.1]:{port}/page",
    "http://[2002:7f00:1::]:{port}/page", "http://[64:ff9b::7f00:1]:{port}/page",
])
async def test_a_redirect_to_a_non_public_address_is_refused(site: str, target: str) -> None:
    port = site.rsplit(":", 1)[1]
    with pytest.raises(ssrf.Blocked, match="not public"):
        await ssrf.fetch(f"{site}/to?url={target.format(port=port)}", allow_first_hop=hop(site))


async def test_a_redirect_to_another_scheme_is_refused(site: str) -> None:
    with pytest.raises(ssrf.Blocked, match="only http and https"):
        await ssrf.fetch(f"{site}/to?url=file:///etc/passwd", allow_first_hop=hop(site))


@pytest.mark.parametrize("location", [
    "http://[::1", "http://[::1]:99999/", "http://[127.0.0.1]/",
    "http://a:b:c/",  # urllib accepts it, httpx does not
])
async def test_a_redirect_to_a_malformed_url_is_refused(site: str, location: str) -> None:
    with pytest.raises(ssrf.Blocked, match="cannot be parsed"):
        await ssrf.fetch(f"{site}/to?url={location}", allow_first_hop=hop(site))


async def test_a_url_the_http_client_cannot_send_is_refused(site: str) -> None:
    with pytest.raises(ssrf.Blocked, match="cannot be parsed"):
        await ssrf.fetch(f"{site}/page\x00", allow_first_hop=hop(site))


async def test_bodies_are_capped(site: str) -> None:
    page = await ssrf.fetch(f"{site}/big", allow_first_hop=hop(site), max_bytes=10_000)
    assert page.truncated and len(page.text) == 10_000


async def test_fetches_are_capped_in_time(site: str) -> None:
    with pytest.raises(Unavailable, match=r"longer than 0\.3 s"):
        await ssrf.fetch(f"{site}/slow", allow_first_hop=hop(site), timeout=0.3)


async def test_unresolvable_hosts_are_a_clear_error() -> None:
    with pytest.raises(InvalidInput, match="cannot resolve"):
        await ssrf.fetch("http://no-such-host.invalid/")


@pytest.mark.parametrize(("text", "urls"), [
    ("(see https://example.com/a).", ["https://example.com/a"]),
    ("see https://example.com/a. Then https://example.com/b, or https://example.com/c?", [
        "https://example.com/a", "https://example.com/b", "https://example.com/c"]),
    ("see http://[2001:db8::1]/ and http://[::1]:8080/x", ["http://[2001:db8::1]/", "http://[::1]:8080/x"]),
    ("(http://[::1]:8080/x).", ["http://[::1]:8080/x"]),
    ("<http://user@[fe80::1%25lo]/p?q=1#f>", ["http://user@[fe80::1%25lo]/p?q=1#f"]),
    ("[http://example.com/x] 'http://example.com/y'", ["http://example.com/x", "http://example.com/y"]),
    ("http://example.com/a http://example.com/a", ["http://example.com/a"]),
    ("a broken http://[::1 link, and http:// alone", []),
])
def test_urls_are_found_whole_without_closing_punctuation(text: str, urls: list[str]) -> None:
    assert find_urls(text) == urls


async def test_ipv6_urls_in_a_message_are_refused_not_raised() -> None:
    pack = ContextPack()
    await add_urls(pack, "see http://[2001:db8::1]/ and http://[::1]:8080/x", NoProvider())
    assert [(u["url"], u["ok"]) for u in pack.urls] == [
        ("http://[2001:db8::1]/", False), ("http://[::1]:8080/x", False)]
    assert all("not public" in u["error"] for u in pack.urls) and pack.blocks == []
