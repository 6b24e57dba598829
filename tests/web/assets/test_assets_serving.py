"""The UI's files: compressed (brotli, gzip), revalidated by ETag, index.html preloading the
module graph of /js/app.js, and the single-page-app fallback."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import brotli
import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from fable_web.spa import STATIC_DIR, Assets, SpaFiles, module_graph

APP_JS = (STATIC_DIR / "js" / "app.js").read_bytes()


def raw(client: httpx.AsyncClient, path: str, **headers: str) -> httpx.Request:
    return client.build_request("GET", path, headers=headers)


async def fetch_raw(client: httpx.AsyncClient, path: str, **headers: str) -> tuple[httpx.Response, bytes]:
    """The response and its body as sent (not decoded by httpx)."""
    response = await client.send(raw(client, path, **headers), stream=True)
    body = b"".join([chunk async for chunk in response.aiter_raw()])
    await response.aclose()
    return response, body


async def test_text_files_are_sent_brotli_or_gzip_compressed_as_the_browser_accepts(client: httpx.AsyncClient) -> None:
    response, body = await fetch_raw(client, "/js/app.js", **{"accept-encoding": "gzip, deflate, br"})
    assert response.headers["content-encoding"] == "br" and brotli.decompress(body) == APP_JS
    assert response.headers["content-type"] == "text/javascript; charset=utf-8"
    assert response.headers["vary"] == "Accept-Encoding"
    assert int(response.headers["content-length"]) == len(body) < len(APP_JS) / 2

    response, body = await fetch_raw(client, "/js/app.js", **{"accept-encoding": "gzip"})
    assert response.headers["content-encoding"] == "gzip" and gzip.decompress(body) == APP_JS

    response, body = await fetch_raw(client, "/js/app.js", **{"accept-encoding": "identity"})
    assert "content-encoding" not in response.headers and body == APP_JS

    response, body = await fetch_raw(client, "/icons/icon-192.png", **{"accept-encoding": "gzip, br"})
    assert "content-encoding" not in response.headers and response.headers["content-type"] == "image/png"


async def test_every_file_has_an_etag_and_a_matching_one_gets_304_without_a_body(client: httpx.AsyncClient) -> None:
    first = await client.get("/css/app.css")
    etag = first.headers["etag"]
    assert first.headers["cache-control"] == "no-cache" and re.fullmatch(r'"[0-9a-f]{20}"', etag)
    again = await client.get("/css/app.css", headers={"if-none-match": etag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    assert (await client.get("/css/app.css", headers={"if-none-match": 'W/"0", ' + etag})).status_code == 304
    assert (await client.get("/css/app.css", headers={"if-none-match": '"stale"'})).status_code == 200
    # the same tag whatever the encoding: it names the file's content
    assert (await client.get("/css/app.css", headers={"accept-encoding": "identity"})).headers["etag"] == etag


async def test_index_preloads_the_whole_static_module_graph_of_app_js(client: httpx.AsyncClient) -> None:
    index = (await client.get("/")).text
    preloaded = re.findall(r'<link rel="modulepreload" href="([^"]+)">', index)
    assert {"/js/api.js", "/js/dom.js", "/js/views/notes.js", "/js/widgets/items.js"} <= set(preloaded)
    assert "/js/settings/account.js" not in preloaded  # a dynamic import(): loaded when its tab opens
    assert index.index("modulepreload") < index.index('<script type="module" src="/js/app.js">')
    for path in preloaded:
        assert (await client.get(path)).status_code == 200, path
    statically_imported = {"/" + p.relative_to(STATIC_DIR).as_posix() for p in (STATIC_DIR / "js").rglob("*.js")}
    assert set(preloaded) <= statically_imported


def test_the_module_graph_follows_relative_imports_and_skips_dynamic_ones() -> None:
    sources = {
        "/js/app.js": b'import { a } from "./a.js";\nimport "./side.js";\nconst later = () => import("./lazy.js");',
        "/js/a.js": b'export { b } from "./lib/b.js";\nimport {\n  c,\n  d,\n} from "../js/c.js";',
        "/js/lib/b.js": b'import { a } from "../a.js"; // a cycle',
        "/js/c.js": b"export const c = 1, d = 2;", "/js/side.js": b"", "/js/lazy.js": b"",
    }
    assert module_graph("/js/app.js", sources) == ["/js/a.js", "/js/side.js", "/js/lib/b.js", "/js/c.js"]


async def test_unknown_paths_get_the_app_and_other_methods_are_refused(client: httpx.AsyncClient) -> None:
    index = await client.get("/")
    for path in ("/notes/12", "/settings/keys", "/../../etc/passwd", "/%2e%2e/pyproject.toml", "/js/nothing.js"):
        response = await client.get(path)
        assert response.status_code == 200 and response.text == index.text, path
    assert (await client.post("/notes")).status_code == 405
    head = await client.head("/js/app.js", headers={"accept-encoding": "identity"})
    assert head.status_code == 200 and head.content == b"" and int(head.headers["content-length"]) == len(APP_JS)


async def test_the_service_worker_is_served_from_the_root_and_revalidated(client: httpx.AsyncClient) -> None:
    response = await client.get("/sw.js")
    assert response.headers["content-type"].startswith("text/javascript")
    assert response.headers["cache-control"] == "no-cache" and "etag" in response.headers
    assert "caches.open" in response.text and '"/api"' not in response.text


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    (tmp_path / "index.html").write_text('<head><script type="module" src="/js/app.js"></script></head>')
    (tmp_path / "js").mkdir()
    (tmp_path / "js" / "app.js").write_text('import "./x.js";\n' + "// padding\n" * 40)
    (tmp_path / "js" / "x.js").write_text("export {};")
    return tmp_path


async def test_a_directory_of_files_is_read_once_and_an_absent_one_serves_nothing(
    tiny: Path, tmp_path_factory: pytest.TempPathFactory,
) -> None:
    assert Assets.load(tiny) is Assets.load(tiny)
    app = Starlette(routes=[Mount("/", app=SpaFiles(tiny))])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        index = await client.get("/anything")
        assert '<link rel="modulepreload" href="/js/x.js">' in index.text
        assert (await client.get("/js/app.js")).headers["content-encoding"] == "br"
        assert "content-encoding" not in (await client.get("/js/x.js")).headers  # too small to gain
    empty = Starlette(routes=[Mount("/", app=SpaFiles(tmp_path_factory.mktemp("x") / "missing"))])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=empty), base_url="http://t") as client:
        assert (await client.get("/")).status_code == 404
