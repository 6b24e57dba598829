"""The web UI's static files at ``/``, with the single-page-app fallback.

A path that names a file serves it; any other path (outside ``/api``) serves ``index.html``,
so the UI's own routes (``/notes/12``) survive a reload. Unknown ``/api/...`` paths never get
here: the API answers them with a JSON 404.
"""

from __future__ import annotations

from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send

__all__ = ["STATIC_DIR", "SpaFiles", "service_worker"]

STATIC_DIR = Path(__file__).resolve().parent / "static"


class SpaFiles(StaticFiles):
    """StaticFiles that answers unknown paths with ``index.html`` (when there is one)."""

    def __init__(self, directory: Path = STATIC_DIR) -> None:
        super().__init__(directory=directory, html=True, check_dir=False)
        self._built = directory.is_dir()  # once, not a blocking stat per request

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._built:  # the UI is not built into this install
            raise HTTPException(404)
        await super().__call__(scope, receive, send)

    async def get_response(self, path: str, scope: Scope) -> Response:
        try:
            return await super().get_response(path, scope)
        except HTTPException as e:
            if e.status_code != 404 or scope["method"] not in ("GET", "HEAD"):
                raise
            return await super().get_response("index.html", scope)


async def service_worker(_: Request) -> Response:
    """``/sw.js``, the UI's service worker (Web Push), at the root so that its scope is the whole
    site, and revalidated at every check (``no-cache``) so a new Fable's worker replaces the old
    one at once rather than within the browsers' 24 hours."""
    if not _SERVICE_WORKER_BUILT:
        raise HTTPException(404)
    return FileResponse(_SERVICE_WORKER, media_type="text/javascript", headers={"Cache-Control": "no-cache"})


_SERVICE_WORKER = STATIC_DIR / "sw.js"
_SERVICE_WORKER_BUILT = _SERVICE_WORKER.is_file()  # once, not a blocking stat per request
