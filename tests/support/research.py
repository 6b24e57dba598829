"""What the research tests share: a question, the fake model's script for a run, pages of the
fake site, and a progress recorder."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fable_core.tools.progress import Progress
from support.pace import scaled

from .fake_llm import FakeLLM, Reply
from .searxng import FakeSearxng, result
from .web_site import FakeSite

__all__ = ["QUERIES", "QUESTION", "Recorder", "article", "script_run", "serve_pages"]

QUESTION = "Why does sourdough rise?"
QUERIES = ["sourdough yeast", "sourdough bacteria", "starter fermentation", "dough gas", "rise time"]


def article(title: str, text: str) -> str:
    return (f"<html><head><title>{title}</title><script>var tracking = 1;</script></head><body>"
            f"<nav>Home | Menu | Login</nav><header>Site banner</header>"
            f"<article><h1>{title}</h1><p>{text}</p><aside>Buy our flour</aside></article>"
            f"<footer>Copyright footer</footer></body></html>")


def serve_pages(site: FakeSite, searxng: FakeSearxng, site_url: str, n: int = 3, **options: object) -> list[str]:
    """``n`` pages on the fake site, found by every query; their URLs."""
    urls = []
    for i in range(1, n + 1):
        site.page(f"/p{i}", article(f"Page {i}", f"Fact number {i} about wild yeast and lactic acid."), **options)
        urls.append(f"{site_url}/p{i}")
    searxng.default = [result(url, f"Hit {i}", "snippet") for i, url in enumerate(urls, start=1)]
    return urls


def script_run(llm: FakeLLM, sections: list[str] | None = None, outline: str | None = None,
               **reply: Any) -> None:
    """The model's queries and outline; sections and the summary echo their prompts."""
    llm.plain_replies.append(Reply(json.dumps({"queries": QUERIES})))
    if outline is None:
        outline = json.dumps({"sections": [{"title": t, "focus": f"all about {t.lower()}", "sources": [1]}
                                           for t in sections or ["Wild yeast", "Lactic bacteria"]]})
    llm.plain_replies.append(Reply(outline, **reply))


@dataclass
class Recorder:
    """A progress sink keeping each item with the time it came."""

    items: list[tuple[float, Progress]] = field(default_factory=list)

    async def __call__(self, item: Progress) -> None:
        self.items.append((time.monotonic(), item))

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [p.data for _, p in self.items if kind is None or p.event == kind]

    def kinds(self) -> list[str]:
        return [p.event for _, p in self.items]


async def until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    async with asyncio.timeout(scaled(seconds)):  # a wait, stretched on a loaded machine
        while not condition():  # noqa: ASYNC110  the fakes signal nothing: poll them
            await asyncio.sleep(0.01)


def outlining(llm: FakeLLM) -> Callable[[], bool]:
    """True once a run asked the model for its outline (where a ``held`` run waits)."""
    return lambda: len(llm.chat_bodies()) >= 2
