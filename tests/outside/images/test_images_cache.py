"""The image cache against a fake web site at the wire: the type is judged by the bytes, the same
image is stored once, what is served carries its own safety headers; every URL goes through the
SSRF guard; refused images (HTML posing as PNG, SVG, too large) leave nothing behind; another
user's image is not found unless a note of its owner that embeds it is shared with them."""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest
from mcp import Client
from sqlalchemy import func, select
from support.images import png
from support.mcp_clients import http_connect, make_key
from support.outside import Api, Call
from support.searxng import FakeSearxng, image_result
from support.web_site import FakeSite

from fable_core.db.models import Image
from fable_core.errors import InvalidInput, NotFound
from fable_core.infra.ssrf import Blocked
from fable_core.outside.images.store import image_path
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_mcp.server import build_server

RED, BLUE = png(200, 30, 30), png(30, 30, 200)


async def stored(fable: Fable, caller: Caller) -> int:
    async with fable.db.reading() as session:
        return int(await session.scalar(select(func.count()).select_from(Image).where(Image.user_id == caller.user_id))
                   or 0)


def files(fable: Fable) -> set[Path]:
    return set((fable.settings.fable_data_dir / "images").glob("*/*"))


async def test_the_type_comes_from_the_bytes_and_one_image_is_stored_once(
        call: Call, site: FakeSite, site_url: str, outside_fable: Fable, alice: Caller) -> None:
    site.put("/a.bin", RED, "application/octet-stream")  # the header says nothing useful: the bytes decide
    site.put("/same.jpg", RED, "image/jpeg")
    saved = await call("cache_image", url=f"{site_url}/a.bin", alt="red]\n")
    assert saved == {"id": saved["id"], "url": f"/api/images/{saved['id']}", "content_type": "image/png",
                     "bytes": len(RED), "markdown": f"![red](/api/images/{saved['id']})"}
    assert (await call("cache_image", url=f"{site_url}/a.bin"))["id"] == saved["id"]
    assert (await call("cache_image", url=f"{site_url}/same.jpg"))["id"] == saved["id"]
    assert await stored(outside_fable, alice) == 1
    sha = hashlib.sha256(RED).hexdigest()
    assert image_path(outside_fable.settings, sha).read_bytes() == RED
    assert site.hits("/a.bin")[0]["accept"].startswith("image/")


async def test_it_is_served_with_its_sniffed_type_and_safety_headers(
        api: Api, call: Call, site: FakeSite, site_url: str, alice: Caller) -> None:
    site.put("/b.png", BLUE, "text/html")
    saved = await call("cache_image", url=f"{site_url}/b.png")
    async with api(alice) as http:
        got = await http.get(saved["url"].removeprefix("/api"))
    assert got.status_code == 200 and got.content == BLUE
    assert got.headers["content-type"] == "image/png"
    assert got.headers["x-content-type-options"] == "nosniff"
    assert got.headers["content-security-policy"] == "default-src 'none'; sandbox"
    assert got.headers["cache-control"] == "private, max-age=31536000, immutable"
    assert got.headers.get_list("content-security-policy") == ["default-src 'none'; sandbox"]


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:9/x.png", "http://2130706433/x.png", "http://0x7f.1/x.png", "http://10.0.0.8/x.png",
    "http://192.168.1.1/x.png", "http://169.254.169.254/latest/meta-data/", "http://[::1]/x.png",
    "http://[::ffff:127.0.0.1]/x.png", "http://localhost/x.png", "file:///etc/passwd", "ftp://example.org/x.png",
])
async def test_loopback_private_and_metadata_urls_are_refused(call: Call, url: str, outside_fable: Fable,
                                                              alice: Caller) -> None:
    with pytest.raises(Blocked):
        await call("cache_image", url=url)
    assert await stored(outside_fable, alice) == 0


async def test_a_redirect_from_the_allowed_site_to_another_local_port_is_refused(
        call: Call, site: FakeSite, site_url: str, outside_fable: Fable, alice: Caller) -> None:
    other = f"http://127.0.0.1:{int(site_url.rsplit(':', 1)[1]) + 1}/x.png"
    site.put("/hop.png", b"", "text/plain", status=302, headers={"location": other})
    with pytest.raises(Blocked, match=r"127\.0\.0\.1"):
        await call("cache_image", url=f"{site_url}/hop.png")
    assert await stored(outside_fable, alice) == 0


async def test_refused_images_leave_nothing_behind(
        call: Call, api: Api, site: FakeSite, site_url: str, outside_fable: Fable, alice: Caller) -> None:
    limit = outside_fable.settings.fable_image_max_bytes
    site.page("/page.png", "<html><script>alert(1)</script></html>")
    site.put("/page.png", b"<html><script>alert(1)</script></html>", "image/png")
    site.put("/logo.svg", b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><script/></svg>',
             "image/svg+xml")
    site.put("/huge.png", RED + b"\0" * 50_000_000, "image/png")
    site.put("/gone.png", b"not here", "text/plain", status=404)
    before = files(outside_fable)
    with pytest.raises(InvalidInput, match="not a PNG, JPEG, GIF, WebP or AVIF") as html:
        await call("cache_image", url=f"{site_url}/page.png")
    assert html.value.type == "not_an_image"
    with pytest.raises(InvalidInput, match="SVG images are refused"):
        await call("cache_image", url=f"{site_url}/logo.svg")
    with pytest.raises(InvalidInput, match=f"larger than the {limit}-byte limit") as huge:
        await call("cache_image", url=f"{site_url}/huge.png")
    assert huge.value.http_status == 413
    async with api(alice) as http:
        gone = await http.post("/images", json={"url": f"{site_url}/gone.png"})
        assert gone.status_code == 503 and "HTTP 404" in gone.json()["error"]["message"]
        for body in ({"url": ""}, {"url": "x" * 2001}, {"url": f"{site_url}/a", "alt": "x" * 201}, {}):
            assert (await http.post("/images", json=body)).status_code == 422, body
    assert await stored(outside_fable, alice) == 0
    assert files(outside_fable) == before


async def test_another_user_gets_not_found_unless_a_note_embedding_it_is_shared(
        call: Call, api: Api, site: FakeSite, site_url: str, alice: Caller, bob: Caller) -> None:
    site.put("/c.png", RED, "image/png")
    saved = await call("cache_image", url=f"{site_url}/c.png")
    path = saved["url"].removeprefix("/api")
    async with api(bob) as http:
        assert (await http.get(path)).status_code == 404
    with pytest.raises(NotFound):
        await call("get_image", as_=bob, image_id=saved["id"])
    # bob embedding alice's image in his own note gains him nothing
    await call("create_note", as_=bob, title="Borrowed", body=f"![x]({saved['url']})")
    with pytest.raises(NotFound):
        await call("get_image", as_=bob, image_id=saved["id"])
    # a note of alice's that embeds it, shared with bob, lets him see it (and only that image)
    note = await call("create_note", title="Trip", body=f"Look: ![red]({saved['url']}) and /api/images/{saved['id']}0")
    await call("share", note_id=note["id"], with_user="bob")
    async with api(bob) as http:
        got = await http.get(path)
        assert got.status_code == 200 and got.content == RED
        assert (await http.get(f"{path}0")).status_code == 404


async def test_upload_by_raw_body_multipart_and_mcp_base64(
        api: Api, outside_fable: Fable, alice: Caller) -> None:
    async with api(alice) as http:
        raw = await http.post("/images/upload", params={"alt": "blue"}, content=BLUE,
                              headers={"content-type": "application/octet-stream"})
        assert raw.status_code == 201, raw.text
        saved = raw.json()
        assert saved["content_type"] == "image/png" and saved["markdown"] == f"![blue](/api/images/{saved['id']})"
        form = await http.post("/images/upload", files={"content": ("b.png", BLUE, "image/png")}, data={"alt": "b"})
        assert form.status_code == 201 and form.json()["id"] == saved["id"]
        as_json = await http.post("/images/upload", json={"content": "aGVsbG8="})  # "hello"
        assert as_json.status_code == 422 and as_json.json()["error"]["type"] == "not_an_image"
        for bad in ({"content": b"<html>hi</html>", "headers": {"content-type": "image/png"}},
                    {"files": {"content": ("x.png", b"GIF8", "image/png")}},
                    {"files": {"other": ("x.png", BLUE, "image/png")}},
                    {"content": b"", "headers": {"content-type": "image/png"}},
                    {"json": {"content": "not base64!"}}):
            answer = await http.post("/images/upload", **bad)  # type: ignore[arg-type]
            assert answer.status_code == 422, (bad, answer.text)
        # an upload may be larger than FABLE_MAX_BODY_BYTES, up to the image limit
        limit = outside_fable.settings.fable_image_max_bytes
        assert outside_fable.settings.fable_max_body_bytes < 3_000_000 < limit
        big = await http.post("/images/upload", content=b"\xff\xd8\xff\xe0" + bytes(3_000_000),
                              headers={"content-type": "application/octet-stream"})
        assert big.status_code == 201 and big.json()["content_type"] == "image/jpeg"
        huge = await http.post("/images/upload", content=b"\xff\xd8\xff\xe0" + bytes(limit),
                               headers={"content-type": "application/octet-stream"})
        assert huge.status_code == 413 and huge.json()["error"]["type"] == "payload_too_large"
        too_big_elsewhere = await http.post("/notes", json={"title": "x", "body": "y" * 3_000_000})
        assert too_big_elsewhere.status_code == 413
    assert await stored(outside_fable, alice) == 2

    async with Client(build_server(outside_fable, replace(alice, surface="mcp"))) as client:
        up = await client.call_tool("upload_image", {"content": base64.b64encode(RED).decode()})
        assert not up.is_error
        image_id = json.loads(up.content[0].text)["id"]  # type: ignore[union-attr]
        got = await client.call_tool("get_image", {"image_id": image_id})
        assert got.content[0].type == "image" and got.content[0].mime_type == "image/png"  # type: ignore[union-attr]
        assert base64.b64decode(got.content[0].data) == RED  # type: ignore[union-attr]
        refused = await client.call_tool("upload_image", {"content": base64.b64encode(b"%PDF-1.7").decode()})
        assert refused.is_error and "not_an_image" in refused.content[0].text  # type: ignore[union-attr]
    assert await stored(outside_fable, alice) == 3


async def test_over_mcp_http_an_image_is_an_image_block_and_another_users_is_not_found(
        outside_fable: Fable, outside_url: str, alice: Caller, bob: Caller) -> None:
    async with http_connect(f"{outside_url}/mcp", await make_key(outside_fable, alice)) as client:
        up = await client.call_tool("upload_image", {"content": base64.b64encode(BLUE).decode(), "alt": "b"})
        image_id = json.loads(up.content[0].text)["id"]  # type: ignore[union-attr]
        got = await client.call_tool("get_image", {"image_id": image_id})
        assert [c.type for c in got.content] == ["image"] and got.content[0].mime_type == "image/png"  # type: ignore[union-attr]
        assert base64.b64decode(got.content[0].data) == BLUE  # type: ignore[union-attr]
    async with http_connect(f"{outside_url}/mcp", await make_key(outside_fable, bob)) as client:
        other = await client.call_tool("get_image", {"image_id": image_id})
        assert other.is_error and "not_found" in other.content[0].text  # type: ignore[union-attr]


async def test_search_images_gives_compact_results(call: Call, searxng: FakeSearxng) -> None:
    searxng.answer("kittens", [image_result("https://example.org/p", "https://img.example.org/k.jpg", "Kitten",
                                            thumbnail="https://img.example.org/k-small.jpg")], category="images")
    found = await call("search_images", query="kittens", limit=3)
    assert found == {"query": "kittens", "page": 1, "results": [
        {"title": "Kitten", "page": "https://example.org/p", "image": "https://img.example.org/k.jpg",
         "thumbnail": "https://img.example.org/k-small.jpg"}]}
    assert searxng.requests[-1]["categories"] == "images"
