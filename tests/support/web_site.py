"""A fake corner of the web: pages, images and feeds a test scripts by path, served over real
HTTP on 127.0.0.1, with every request recorded (path and headers, so a conditional GET can be
checked).

``site.page("/a", "<html>...</html>")`` serves that markup; ``site.put(path, body, content_type,
status=, headers=, delay=)`` anything else (an image's bytes, a feed, a redirect with a
``location`` header). A path nobody scripted answers 404. ``etag``/``last_modified`` given to
``put`` make the path answer 304 to a request that carries them back.

Run it with ``serve_in_thread(web_site_app(site))``; Fable under test lets its host through the
SSRF guard with ``FABLE_FETCH_ALLOW_HOSTS`` (everything else stays checked).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

__all__ = ["FakeSite", "Served", "web_site_app"]


@dataclass
class Served:
    body: bytes
    content_type: str
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    etag: str | None = None
    last_modified: str | None = None


@dataclass
class FakeSite:
    paths: dict[str, Served] = field(default_factory=dict)
    requests: list[dict[str, str]] = field(default_factory=list)

    def reset(self) -> None:
        self.paths.clear()
        self.requests.clear()

    def put(self, path: str, body: bytes | str, content_type: str = "text/plain", **options: object) -> None:
        raw = body.encode() if isinstance(body, str) else body
        self.paths[path] = Served(raw, content_type, **options)  # type: ignore[arg-type]

    def page(self, path: str, markup: str, **options: object) -> None:
        self.put(path, markup, "text/html; charset=utf-8", **options)

    def hits(self, path: str) -> list[dict[str, str]]:
        return [r for r in self.requests if r["path"] == path]


def web_site_app(site: FakeSite) -> Starlette:
    async def anything(request: Request) -> Response:
        path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        site.requests.append({"path": path, **{k.lower(): v for k, v in request.headers.items()}})
        served = site.paths.get(path) or site.paths.get(request.url.path)
        if served is None:
            return Response("not found", status_code=404, media_type="text/plain")
        if served.delay:
            await asyncio.sleep(served.delay)
        validators = {k: v for k, v in (("etag", served.etag), ("last-modified", served.last_modified)) if v}
        if (served.etag and request.headers.get("if-none-match") == served.etag) or (
                served.last_modified and request.headers.get("if-modified-since") == served.last_modified):
            return Response(status_code=304, headers=validators)
        return Response(served.body, status_code=served.status, headers={**served.headers, **validators},
                        media_type=served.content_type)

    return Starlette(routes=[Route("/{path:path}", anything)])
