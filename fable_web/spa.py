"""The web UI's static files at ``/``, with the single-page-app fallback.

A path that names a file serves it; any other path (outside ``/api``) serves ``index.html``,
so the UI's own routes (``/notes/12``) survive a reload. Unknown ``/api/...`` paths never get
here: the API answers them with a JSON 404.

The files are read once per process (``Assets.load``, about 30 ms for the whole UI) and served
from memory:

- **compressed**: text files are kept gzipped and brotli-compressed (quality 5: close to the best
  ratio at the cost of gzip; 11 would take about a second at start-up), and each request gets the
  best its ``Accept-Encoding`` allows, with ``Vary: Accept-Encoding``;
- **revalidated by ETag**: every file has a strong ETag (its content's hash) and
  ``Cache-Control: no-cache``, so a browser keeps its copy and asks "still this?" (a 304 with no
  body) rather than downloading it again. Content-hashed URLs with a year's ``max-age`` would save
  even that round trip, but the UI's ES modules import each other by plain path (``./dom.js``):
  hashing them means rewriting every import (a build step) or an import map, which would be an
  inline script that the Content-Security-Policy refuses;
- **one module graph per page**: ``index.html`` gets a ``<link rel="modulepreload">`` for every
  module ``/js/app.js`` imports statically, found by reading the imports at start-up, so the
  browser fetches the whole graph at once instead of one level of imports per round trip.

The service worker, ``/sw.js``, is one of these files: at the root so that its scope is the
whole site, and revalidated like the rest, so a new Fable's worker replaces the old one at once.
"""

from __future__ import annotations

import gzip
import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath

import brotli
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from fable_web.sessions import COOKIE, HINT_COOKIE, MAX_AGE

__all__ = ["STATIC_DIR", "Asset", "Assets", "SpaFiles", "module_graph"]

STATIC_DIR = Path(__file__).resolve().parent / "static"

_TYPES = {
    ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml", ".json": "application/json", ".webmanifest": "application/manifest+json",
    ".png": "image/png", ".ico": "image/x-icon", ".woff2": "font/woff2", ".txt": "text/plain; charset=utf-8",
    ".map": "application/json",
}
_COMPRESSIBLE = {".html", ".js", ".css", ".svg", ".json", ".webmanifest", ".txt", ".map"}
_SMALLEST = 256  # bytes: below this, compressing saves less than its header costs
_ENTRY = "/js/app.js"
_IMPORT = re.compile(  # import x from "./x.js", import "./x.js", export { y } from "../y.js"
    r"""(?:^|[;\s])(?:import|export)\s*(?:[\w*{}\s,$]+?\s*from\s*)?["'](\.{1,2}/[^"']+)["']""", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Asset:
    """One file as served: its bytes, their compressed forms (when smaller) and its ETag."""

    body: bytes
    media_type: str
    etag: str
    gzip: bytes | None = None
    br: bytes | None = None

    @classmethod
    def of(cls, body: bytes, suffix: str) -> Asset:
        etag = f'"{hashlib.sha256(body).hexdigest()[:20]}"'
        media_type = _TYPES.get(suffix, "application/octet-stream")
        if suffix not in _COMPRESSIBLE or len(body) < _SMALLEST:
            return cls(body, media_type, etag)
        zipped = gzip.compress(body, compresslevel=6, mtime=0)
        squeezed = brotli.compress(body, quality=5)
        return cls(body, media_type, etag, zipped if len(zipped) < len(body) else None,
                   squeezed if len(squeezed) < len(body) else None)

    def encoded(self, accept_encoding: str) -> tuple[bytes, str | None]:
        """The body and its Content-Encoding for a request's ``Accept-Encoding``."""
        accepted = {part.split(";")[0].strip() for part in accept_encoding.lower().split(",")}
        if self.br is not None and "br" in accepted:
            return self.br, "br"
        if self.gzip is not None and "gzip" in accepted:
            return self.gzip, "gzip"
        return self.body, None


class Assets:
    """Every file under a directory, by URL path (``/js/app.js``), read and compressed once."""

    def __init__(self, files: dict[str, Asset]) -> None:
        self.files = files

    @classmethod
    @lru_cache(maxsize=4)
    def load(cls, directory: Path) -> Assets:
        """The directory's files (once per process: every app made in it shares them)."""
        if not directory.is_dir():
            return cls({})
        sources = {f"/{p.relative_to(directory).as_posix()}": p.read_bytes()
                   for p in sorted(directory.rglob("*")) if p.is_file() and not p.name.startswith(".")}
        if "/index.html" in sources:
            sources["/index.html"] = _with_preloads(sources["/index.html"], sources)
        return cls({path: Asset.of(body, PurePosixPath(path).suffix) for path, body in sources.items()})

    def get(self, path: str) -> Asset | None:
        return self.files.get("/index.html" if path == "/" else path)


def module_graph(entry: str, sources: dict[str, bytes]) -> list[str]:
    """The paths of the modules ``entry`` imports statically, directly or not (dynamic
    ``import()`` is left out: what it loads is loaded on demand), in first-seen order."""
    seen: list[str] = []
    pending = [entry]
    while pending:
        path = pending.pop(0)
        if path in seen or path not in sources:
            continue
        seen.append(path)
        base = PurePosixPath(path).parent
        imports = _IMPORT.findall(sources[path].decode("utf-8", "replace"))
        pending.extend(_normalise(base / relative) for relative in imports)
    return [path for path in seen if path != entry]


def _normalise(path: PurePosixPath) -> str:
    parts: list[str] = []
    for part in path.parts[1:]:
        if part == "..":
            parts = parts[:-1]
        elif part != ".":
            parts.append(part)
    return "/" + "/".join(parts)


def _with_preloads(index: bytes, sources: dict[str, bytes]) -> bytes:
    script = f'<script type="module" src="{_ENTRY}"></script>'.encode()
    if script not in index:
        return index
    links = "".join(f'<link rel="modulepreload" href="{path}">\n  ' for path in module_graph(_ENTRY, sources))
    return index.replace(script, links.encode() + script, 1)


class SpaFiles:
    """The UI's files from memory; an unknown path answers ``index.html`` (when there is one)."""

    def __init__(self, directory: Path = STATIC_DIR, *, secure: bool = False) -> None:
        self.assets = Assets.load(directory)
        self.secure = secure  # SECURE_COOKIES, for the hint cookie

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            raise HTTPException(404)
        if not self.assets.files:  # the UI is not built into this install
            raise HTTPException(404)
        if scope["method"] not in ("GET", "HEAD"):
            raise HTTPException(405, headers={"Allow": "GET, HEAD"})
        path = scope["path"][len(scope.get("root_path", "")):] or "/"
        asset = self.assets.get(path) or self.assets.get("/index.html")
        if asset is None:
            raise HTTPException(404)
        response = _respond(asset, Headers(scope=scope), scope["method"] == "HEAD")
        if asset.media_type.startswith("text/html"):
            self._hint(Request(scope).cookies, response)
        await response(scope, receive, send)

    def _hint(self, cookies: dict[str, str], response: Response) -> None:
        """A session cookie from before the web UI's hint existed gets its hint with the page, so
        an upgrade does not sign anyone out (the UI asks "who am I?" only with the hint). It is a
        hint, not a decision: the session is checked when the UI asks."""
        if COOKIE in cookies and HINT_COOKIE not in cookies:
            response.set_cookie(HINT_COOKIE, "1", max_age=MAX_AGE, path="/", httponly=False, samesite="lax",
                                secure=self.secure)


def _respond(asset: Asset, request: Headers, head: bool) -> Response:
    headers = {"ETag": asset.etag, "Cache-Control": "no-cache"}
    if asset.gzip is not None or asset.br is not None:
        headers["Vary"] = "Accept-Encoding"
    if asset.etag in [tag.strip().removeprefix("W/") for tag in request.get("if-none-match", "").split(",")]:
        return Response(status_code=304, headers=headers)
    body, encoding = asset.encoded(request.get("accept-encoding", ""))
    if encoding:
        headers["Content-Encoding"] = encoding
    response = Response(b"" if head else body, media_type=asset.media_type, headers=headers)
    response.headers["Content-Length"] = str(len(body))
    return response
