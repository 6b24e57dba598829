"""A fake SearXNG at the wire: ``/search?format=json`` answered as SearXNG answers it, from a
script a test sets (results by query and category, else ``default``), recording every request
(its query parameters); ``delay`` holds each answer that long (a slow instance), ``status``
answers every request with that HTTP status instead (SearXNG answers 403 when the JSON format
is off).

Run it with ``serve_in_thread(searxng_app(state))``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = ["FakeSearxng", "image_result", "result", "searxng_app"]


def result(url: str, title: str, content: str = "", engine: str = "duckduckgo", **extra: Any) -> dict[str, Any]:
    """One general result as SearXNG's JSON carries it."""
    return {"url": url, "title": title, "content": content, "engine": engine, "engines": [engine],
            "parsed_url": ["https", url.split("/")[2] if "//" in url else "", "/", "", "", ""],
            "template": "default.html", "positions": [1], "score": 1.0, "category": "general", **extra}


def image_result(page: str, img_src: str, title: str = "an image", thumbnail: str | None = None,
                 engine: str = "bing images") -> dict[str, Any]:
    """One image result: ``url`` is the page the image is on, ``img_src`` the image."""
    return {"url": page, "title": title, "content": "", "engine": engine, "engines": [engine],
            "template": "images.html", "img_src": img_src, "thumbnail_src": thumbnail or img_src,
            "img_format": "jpeg", "resolution": "800 x 600", "score": 1.0, "category": "images"}


@dataclass
class FakeSearxng:
    answers: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)  # (query, category)
    default: list[dict[str, Any]] = field(default_factory=list)
    delay: float = 0.0
    status: int = 200
    requests: list[dict[str, str]] = field(default_factory=list)

    def reset(self) -> None:
        self.answers.clear()
        self.default = []
        self.delay, self.status = 0.0, 200
        self.requests.clear()

    def answer(self, query: str, results: list[dict[str, Any]], category: str = "general") -> None:
        self.answers[(query, category)] = results


def searxng_app(state: FakeSearxng) -> Starlette:
    async def search(request: Request) -> Response:
        params = dict(request.query_params)
        state.requests.append(params)
        if state.delay:
            await asyncio.sleep(state.delay)
        if state.status != 200:
            return Response("Forbidden" if state.status == 403 else "error", status_code=state.status)
        if params.get("format") != "json":
            return Response("<html>SearXNG</html>", media_type="text/html")
        query, category = params.get("q", ""), params.get("categories", "general")
        results = state.answers.get((query, category), state.default)
        return JSONResponse({"query": query, "number_of_results": len(results), "results": results,
                             "answers": [], "corrections": [], "infoboxes": [], "suggestions": [],
                             "unresponsive_engines": []})

    return Starlette(routes=[Route("/search", search)])
