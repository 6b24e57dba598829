"""A small client of SearXNG's JSON API (``/search?format=json``): the one way Fable searches the web.

The instance is the operator's (``SEARXNG_URL``), never a user's, so no SSRF guard applies to
asking it; the URLs it answers with are the outside world's and every fetch of one goes through
:mod:`fable_core.infra.ssrf`. A search has ``FABLE_SEARXNG_TIMEOUT`` seconds in all; a slow or failing
instance is :class:`Unavailable` naming what went wrong, and costs only the call waiting on it
(search tools hold no database connection meanwhile).

While SearXNG is configured the ``searxng`` service is up (:mod:`fable_core.tools.availability`), so
the tools that need it are offered; without it they are not, and say why if called anyway.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import httpx

from fable_core.config import Settings
from fable_core.errors import Unavailable
from fable_core.infra.tls import tls_context

if TYPE_CHECKING:
    from fable_core.tools.runtime import Closer, Runtime

__all__ = ["SEARXNG", "Category", "Hit", "TimeRange", "install", "search", "searxng_url"]

SEARXNG = "searxng"
_log = logging.getLogger(__name__)
Category = Literal["general", "images", "news"]
TimeRange = Literal["day", "week", "month", "year"]


@dataclass(frozen=True, slots=True)
class Hit:
    """One result. ``image``/``thumbnail`` are set for image results; ``published`` when the
    engine dated it."""

    title: str
    url: str
    snippet: str
    engine: str
    image: str | None = None
    thumbnail: str | None = None
    published: str | None = None


def searxng_url(settings: Settings) -> str:
    """The configured instance; Unavailable, saying how to set it up, when there is none."""
    if not settings.searxng_url:
        raise Unavailable("web search is not set up on this Fable: its operator sets SEARXNG_URL to a "
                          "SearXNG instance with the JSON format enabled", service=SEARXNG)
    return settings.searxng_url.rstrip("/")


async def search(settings: Settings, query: str, *, category: Category = "general", page: int = 1,
                 time_range: TimeRange | None = None, language: str | None = None) -> list[Hit]:
    """One page of SearXNG's results for ``query``, in its order, each URL once."""
    params: dict[str, Any] = {"q": query, "format": "json", "categories": category, "pageno": page}
    if time_range:
        params["time_range"] = time_range
    if language:
        params["language"] = language
    body = await _get(settings, params)
    results = body.get("results") if isinstance(body, dict) else None
    if not isinstance(results, list):
        raise Unavailable("SearXNG answered without a list of results", service=SEARXNG)
    hits: list[Hit] = []
    seen: set[str] = set()
    for item in results:
        hit = _hit(item)
        if hit is not None and hit.url not in seen:
            seen.add(hit.url)
            hits.append(hit)
    return hits


def _hit(item: Any) -> Hit | None:
    if not isinstance(item, dict):
        return None
    url = item.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return None
    engine = item.get("engine") or next(iter(item.get("engines") or []), "")
    return Hit(title=_text(item.get("title"), 300) or url[:300], url=url[:2000],
               snippet=_text(item.get("content"), 400), engine=str(engine)[:40],
               image=_url(item.get("img_src")), thumbnail=_url(item.get("thumbnail_src") or item.get("thumbnail")),
               published=_text(item.get("publishedDate"), 40) or None)


def _text(value: Any, limit: int) -> str:
    return " ".join(str(value).split())[:limit] if value else ""


def _url(value: Any) -> str | None:
    if isinstance(value, str) and value.startswith("//"):
        value = "https:" + value  # engines give protocol-relative image URLs
    return value[:2000] if isinstance(value, str) and value.startswith(("http://", "https://")) else None


async def _get(settings: Settings, params: dict[str, Any]) -> Any:
    base = searxng_url(settings)
    seconds = settings.fable_searxng_timeout
    try:
        async with asyncio.timeout(seconds), httpx.AsyncClient(
                timeout=httpx.Timeout(seconds, connect=min(seconds, 3.0)),
                headers={"Accept": "application/json"}, verify=tls_context()) as client:
            response = await client.get(base + "/search", params=params)
    except TimeoutError as e:
        raise Unavailable(f"SearXNG did not answer within {seconds:g} s; try again later", service=SEARXNG) from e
    except httpx.HTTPError as e:
        raise Unavailable(f"SearXNG could not be reached ({type(e).__name__}); try again later",
                          service=SEARXNG) from e
    if response.status_code == 403:
        raise Unavailable("SearXNG refused the JSON format (403): enable it with `search.formats: [html, json]` "
                          "in its settings.yml", service=SEARXNG, status=403)
    if response.status_code != 200:
        raise Unavailable(f"SearXNG answered HTTP {response.status_code}; try again later",
                          service=SEARXNG, status=response.status_code)
    try:
        return response.json()
    except ValueError as e:
        raise Unavailable("SearXNG answered something that is not JSON", service=SEARXNG) from e


async def install(fable: Runtime) -> Closer | None:
    """Offer the tools that need SearXNG while it is configured; say once, at start, when the
    configured one does not answer (not at the first research, minutes later)."""
    fable.availability.set(SEARXNG, bool(fable.settings.searxng_url))
    if not fable.settings.searxng_url:
        return None
    probe = asyncio.get_running_loop().create_task(_say_if_unreachable(fable.settings), name="fable-searxng-probe")

    async def close() -> None:
        probe.cancel()
        await asyncio.gather(probe, return_exceptions=True)

    return close


async def _say_if_unreachable(settings: Settings) -> None:
    """One line when SEARXNG_URL does not answer at all (any HTTP answer will do: a search costs
    the instance a query to its engines)."""
    base = searxng_url(settings)
    try:
        async with httpx.AsyncClient(timeout=httpx.Timeout(5.0, connect=3.0), verify=tls_context()) as client:
            await client.get(base + "/healthz")
    except httpx.HTTPError as e:
        _log.warning("SearXNG at SEARXNG_URL=%s does not answer (%s): web research and web search wait for it; "
                     "set SEARXNG_URL to where it runs, or unset it (docs/configuration.md)", base, type(e).__name__)
