"""The SSRF guard refuses every non-public target, in every spelling, after DNS and after
redirects; it caps size and time. Local test servers stand in for the outside world: the
first hop to them is allowed explicitly (a test-only parameter), everything after is checked."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import pytest
from fake_llm import running
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from fable_core.assistant import ssrf
from fable_core.errors import InvalidInput, Unavailable


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


async def test_a_hostname_resolving_to_a_private_address_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.getaddrinfo

    def fake_dns(host, *args, **kwargs):
        if host == "intranet.example.com":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.1.2.3", 80)),
                    (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", 80))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake_dns)
    with pytest.raises(ssrf.Blocked, match="10.1.2.3"):
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
    with running(app) as url:
        yield url


def hop(url: str) -> tuple[str]:
    return (url.removeprefix("http://"),)


async def test_the_allowed_first_hop_is_fetched(site: str) -> None:
    page = await ssrf.fetch(f"{site}/page", allow_first_hop=hop(site))
    assert (page.status, page.text, page.truncated) == (200, "hello from the page", False)


@pytest.mark.parametrize("target", [
    "http://169.254.169.254/latest/meta-data/", "http://127.0.0.1:{port}/page", "http://localhost:{port}/page",
    "http://0x7f000001:{port}/page", "http://[::ffff:127.0.0.1]:{port}/page",
])
async def test_a_redirect_to_a_non_public_address_is_refused(site: str, target: str) -> None:
    port = site.rsplit(":", 1)[1]
    with pytest.raises(ssrf.Blocked, match="not public"):
        await ssrf.fetch(f"{site}/to?url={target.format(port=port)}", allow_first_hop=hop(site))


async def test_a_redirect_to_another_scheme_is_refused(site: str) -> None:
    with pytest.raises(ssrf.Blocked, match="only http and https"):
        await ssrf.fetch(f"{site}/to?url=file:///etc/passwd", allow_first_hop=hop(site))


async def test_bodies_are_capped(site: str) -> None:
    page = await ssrf.fetch(f"{site}/big", allow_first_hop=hop(site), max_bytes=10_000)
    assert page.truncated and len(page.text) == 10_000


async def test_fetches_are_capped_in_time(site: str) -> None:
    with pytest.raises(Unavailable, match="longer than 0.3 s"):
        await ssrf.fetch(f"{site}/slow", allow_first_hop=hop(site), timeout=0.3)


async def test_unresolvable_hosts_are_a_clear_error() -> None:
    with pytest.raises(InvalidInput, match="cannot resolve"):
        await ssrf.fetch("http://no-such-host.invalid/")
