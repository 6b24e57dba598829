"""``web_search``: the web through the operator's SearXNG, as short results an agent can afford."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints

from fable_core.outside.websearch.searxng import SEARXNG, Hit, TimeRange, search
from fable_core.tools import Context, Route, tool
from fable_core.tools.results import absent_when_none

__all__ = ["WebResult", "WebResults"]

Query = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=400)]


class WebResult(BaseModel):
    title: str
    url: str
    snippet: str = Field("", exclude_if=lambda v: not v)
    engine: str = Field("", exclude_if=lambda v: not v)
    published: str | None = absent_when_none()


class WebResults(BaseModel):
    query: str
    page: int
    results: list[WebResult]


def result(hit: Hit) -> WebResult:
    return WebResult(title=hit.title, url=hit.url, snippet=hit.snippet, engine=hit.engine, published=hit.published)


@tool(group="research", title="Search the web", scope="read", transaction="phases", open_world=True, needs=(SEARXNG,),
      route=Route("GET", "/web/search"))
async def web_search(
    ctx: Context,
    query: Query,
    page: Annotated[int, Field(ge=1, le=10)] = 1,
    limit: Annotated[int, Field(ge=1, le=20)] = 8,
    time_range: TimeRange | None = None,
    category: Literal["general", "news"] = "general",
) -> WebResults:
    """Search the web: title, URL, snippet and engine of each result.

    Args:
        time_range: Only pages from the last day, week, month or year.
    """
    hits = await search(ctx.settings, query, category=category, page=page, time_range=time_range)
    return WebResults(query=query, page=page, results=[result(h) for h in hits[:limit]])
