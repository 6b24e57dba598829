"""The research pipeline, from a question to a report: queries → search → sources → outline →
sections → summary. It touches no database: what it finds goes to the caller as events and a
:class:`Report`, which :mod:`.writing` turns into notes in one transaction.

1. The model writes :data:`QUERIES` focused search queries (JSON asked for, read leniently:
   a JSON list, or lines; none usable: the question itself).
2. They run on SearXNG in parallel, started :data:`STAGGER` seconds apart (engines rate-limit
   bursts). One failing search costs its results; all failing is the run's error.
3. Up to :data:`MAX_SOURCES` unique URLs, taken in turn from each query's ranking, are fetched in
   parallel through the SSRF guard (``FABLE_RESEARCH_FETCH_TIMEOUT``, ``FABLE_RESEARCH_MAX_BYTES``);
   a URL naming a non-public address is skipped before it counts, one that resolves to one is
   refused by the guard. HTML and plain text only; readable text via :mod:`fable_core.infra.pages`. No page
   read at all is the run's error.
4. The model outlines 2–8 sections (title, focus, source numbers). An answer that is no such
   outline makes the report ONE synthesised text instead.
5. Each section is written in parallel (within the user's share of the model) from its sources
   (the outline's, else those sharing most words with it), citing them as ``[n]``.
6. The model writes an executive summary of the sections.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urldefrag

from fable_core.assistant.answers import json_object_from
from fable_core.assistant.gate import background
from fable_core.assistant.providers import Provider
from fable_core.config import Settings
from fable_core.db.models import title_key
from fable_core.errors import FableError, Unavailable
from fable_core.infra.pages import printable, read_page
from fable_core.infra.ssrf import Blocked, check_url, fetch
from fable_core.outside.websearch.searxng import Hit, search

__all__ = ["MAX_SOURCES", "QUERIES", "STAGGER", "Pipeline", "Report", "Section", "Source", "outline_from",
           "queries_from"]

QUERIES = 5
STAGGER = 0.2  # seconds between the starts of two searches
MAX_SOURCES = 15
MAX_SECTIONS = 8
SOURCE_CHARS = 3000  # of each source, in a section's prompt
_TEXT_TYPES = ("text/html", "application/xhtml+xml", "text/plain")
_WORD = re.compile(r"\w{3,}")
_NOT_IN_TITLES = re.compile(r"[\[\]|#]")  # they would break the index's [[links]]
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")

_QUERY_PROMPT = ("You plan web research. Write {n} focused, different web search queries that together answer "
                 'the question. Answer with JSON only: {{"queries": ["...", "..."]}}')
_OUTLINE_PROMPT = ("You outline a research report answering the question from the numbered sources. Plan 2 to 8 "
                   "sections. Answer with JSON only: "
                   '{"sections": [{"title": "short title", "focus": "what it covers", "sources": [1, 2]}]}')
_SECTION_PROMPT = ("You write one section of a research report, in markdown, from the numbered sources given. "
                   "Cite the sources you use as [n] after the sentences they support. Use only the sources. "
                   "No heading, no preamble.")
_SUMMARY_PROMPT = ("Write the executive summary of this research report in at most 150 words: the answer to "
                   "the question first, then the main points. Plain prose; keep the [n] citations.")
_SINGLE_PROMPT = ("Write a research report answering the question from the numbered sources, in markdown with "
                  "a few ## headings. Cite the sources you use as [n]. Use only the sources. No preamble.")

Emit = Callable[[str, dict[str, Any]], object]


@dataclass(frozen=True, slots=True)
class Source:
    n: int
    url: str
    title: str
    text: str

    def cited(self) -> dict[str, Any]:
        return {"n": self.n, "url": self.url, "title": self.title}


@dataclass(slots=True)
class Section:
    title: str
    focus: str = ""
    sources: list[int] = field(default_factory=list)
    text: str = ""


@dataclass(slots=True)
class Report:
    """What a run found. ``sections`` empty: the outline failed and ``text`` is the one note."""

    question: str
    queries: list[str]
    sources: list[Source]
    sections: list[Section] = field(default_factory=list)
    summary: str = ""
    text: str = ""
    fallback: str = ""  # why there is one note instead of sections


class Pipeline:
    """One run of the pipeline for a question, reporting each step through ``emit``."""

    def __init__(self, model: Provider, settings: Settings, emit: Emit) -> None:
        self.model = model
        self.settings = settings
        self.emit = emit
        self.allow = tuple(settings.fable_fetch_allow_hosts)
        self.queries: list[str] = []  # what it found so far, for a run that fails later
        self.sources: list[Source] = []

    async def run(self, question: str) -> Report:
        queries = self.queries = await self.plan_queries(question)
        self.emit("queries", {"queries": queries})
        hits = await self.search(queries)
        sources = self.sources = await self.read(self.pick(hits))
        report = Report(question, queries, sources)
        outline = outline_from(await self._ask(_OUTLINE_PROMPT, _outline_request(question, sources), 600),
                               len(sources))
        if outline is None:
            report.fallback = "the model's outline was not a list of 2 to 8 sections"
            self.emit("outline", {"sections": [], "fallback": report.fallback})
            report.text = await self._ask(_SINGLE_PROMPT, _sources_request(question, "", sources), 1500)
            if not _WORD.search(report.text):
                raise Unavailable("no model text: the model's outline failed and its report was empty")
            return report
        self.emit("outline", {"sections": [{"title": s.title, "focus": s.focus} for s in outline]})
        report.sections = outline
        await asyncio.gather(*(self.write(question, s, sources, i, len(outline)) for i, s in enumerate(outline)))
        digest = "\n\n".join(f"## {s.title}\n{s.text[:1500]}" for s in outline)
        report.summary = await self._ask(_SUMMARY_PROMPT, f"Question: {question}\n\n{digest}", 300)
        return report

    async def plan_queries(self, question: str) -> list[str]:
        answer = await self._ask(_QUERY_PROMPT.format(n=QUERIES), f"Question: {question}", 300)
        return queries_from(answer, question)

    async def search(self, queries: list[str]) -> list[list[Hit]]:
        """Each query's hits, the searches started :data:`STAGGER` seconds apart."""

        async def one(i: int, query: str) -> list[Hit] | FableError:
            await asyncio.sleep(i * STAGGER)
            try:
                hits = await search(self.settings, query)
            except FableError as e:
                self.emit("search", {"query": query, "error": e.message})
                return e
            self.emit("search", {"query": query, "results": len(hits)})
            return hits

        found = await asyncio.gather(*(one(i, q) for i, q in enumerate(queries)))
        lists = [f for f in found if isinstance(f, list)]
        if not lists:
            first = found[0]
            raise Unavailable(f"web search failed: {first.message if isinstance(first, FableError) else first}")
        return lists

    def pick(self, hits: list[list[Hit]]) -> list[Hit]:
        """Up to :data:`MAX_SOURCES` unique URLs, in turn from each query's ranking; URLs that name
        a non-public address are skipped (reported), never counted."""
        picked: list[Hit] = []
        seen: set[str] = set()
        for rank in range(max(map(len, hits), default=0)):
            for ranking in hits:
                if rank >= len(ranking) or len(picked) >= MAX_SOURCES:
                    continue
                hit = ranking[rank]
                url = urldefrag(hit.url).url
                if url in seen:
                    continue
                seen.add(url)
                try:
                    check_url(url, self.allow)
                except Blocked as e:
                    self.emit("source", {"url": url[:300], "status": "skipped", "reason": e.message})
                    continue
                picked.append(hit)
        return picked

    async def read(self, hits: list[Hit]) -> list[Source]:
        pages = await asyncio.gather(*(self._page(hit) for hit in hits))
        sources = [Source(n, hit.url, title, text)
                   for n, (hit, (title, text)) in enumerate(((h, p) for h, p in zip(hits, pages, strict=True)
                                                            if p is not None), start=1)]
        if not sources:
            raise Unavailable(f"none of the {len(hits)} pages found could be read" if hits
                              else "the web search found no pages to read")
        return sources

    async def _page(self, hit: Hit) -> tuple[str, str] | None:
        try:
            page = await fetch(hit.url, allow=self.allow, max_bytes=self.settings.fable_research_max_bytes,
                               timeout=self.settings.fable_research_fetch_timeout,
                               headers={"Accept": "text/html,application/xhtml+xml,text/plain;q=0.8"})
        except FableError as e:  # Unavailable (unreachable, too slow), InvalidInput (Blocked, too many redirects)
            self.emit("source", {"url": hit.url[:300], "status": "failed", "reason": e.message})
            return None
        kind = page.content_type.split(";")[0].strip().lower()
        reason = (f"HTTP {page.status}" if page.status != 200 else
                  f"not a text page ({kind or 'no type'})" if kind not in _TEXT_TYPES else "")
        title, text = hit.title, ""
        if not reason:
            if kind == "text/plain":
                text = printable(page.text[:20_000]).strip()
            else:
                found = await read_page(page.text)
                title, text = found.title or hit.title, found.text
            reason = "" if _WORD.search(text) else "no readable text"
        if reason:
            self.emit("source", {"url": hit.url[:300], "status": "failed", "reason": reason})
            return None
        self.emit("source", {"url": hit.url[:300], "status": "read", "title": title[:300]})
        return title[:300], text

    async def write(self, question: str, section: Section, sources: list[Source], i: int, total: int) -> None:
        chosen = [s for s in sources if s.n in section.sources] or relevant(section, sources)
        section.sources = [s.n for s in chosen]
        focus = f"Section: {section.title}\nFocus: {section.focus}" if section.focus else f"Section: {section.title}"
        text = await self._ask(_SECTION_PROMPT, _sources_request(question, focus, chosen), 900)
        section.text = text if _WORD.search(text) else "_The model wrote nothing for this section._"
        self.emit("section", {"title": section.title, "index": i + 1, "of": total})

    async def _ask(self, system: str, user: str, max_tokens: int) -> str:
        with background():  # a research run waits behind answers and captures, never cuts them
            answer = await self.model.complete([{"role": "system", "content": system},
                                                {"role": "user", "content": user}], max_tokens=max_tokens)
        return printable(_THINKING.sub("", answer)).strip()


_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL)


def relevant(section: Section, sources: list[Source], keep: int = 4) -> list[Source]:
    """The sources sharing most words with the section's title and focus (all, up to ``keep``,
    when none shares any)."""
    words = {w.lower() for w in _WORD.findall(f"{section.title} {section.focus}")}
    scored = sorted(sources, key=lambda s: -len(words & {w.lower() for w in _WORD.findall(s.text[:SOURCE_CHARS])}))
    return scored[:keep]


def queries_from(answer: str, question: str) -> list[str]:
    """The search queries in a model's answer: a JSON object's ``queries``, a JSON list, or one
    per line; the question itself when none is usable."""
    data = json_object_from(answer)
    items: Any = data.get("queries") if data is not None else None
    if not isinstance(items, list):
        items = _json_list(answer)
    if not isinstance(items, list):
        items = [line for line in answer.splitlines() if not line.strip().endswith(":")]
    queries: list[str] = []
    for item in items:
        query = " ".join(_LIST_MARK.sub("", str(item)).strip().strip("\"'`").split())[:200]
        if len(query) >= 3 and title_key(query) not in {title_key(q) for q in queries} and "{" not in query:
            queries.append(query)
    return queries[:QUERIES] or [question[:200]]


def outline_from(answer: str, sources: int) -> list[Section] | None:
    """The sections of a model's outline (2 to 8, unique titles; source numbers kept when they
    name a source), or None when the answer holds no such outline."""
    data = json_object_from(answer)
    items: Any = data.get("sections") if data is not None else _json_list(answer)
    if not isinstance(items, list):
        return None
    sections: list[Section] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("title"), str):
            continue
        title = " ".join(_NOT_IN_TITLES.sub(" ", item["title"]).split()).strip("\"'*")[:120]
        if not title_key(title) or title_key(title) in {title_key(s.title) for s in sections}:
            continue
        refs = item.get("sources")
        numbers = [n for n in refs if isinstance(n, int) and 1 <= n <= sources] if isinstance(refs, list) else []
        sections.append(Section(title, " ".join(str(item.get("focus") or "").split())[:500], numbers))
    return sections[:MAX_SECTIONS] if len(sections) >= 2 else None


def _json_list(answer: str) -> Any:
    match = re.search(r"\[.*\]", answer, re.DOTALL)
    try:
        return json.loads(match.group(0)) if match else None
    except json.JSONDecodeError:
        return None


def _outline_request(question: str, sources: list[Source]) -> str:
    listing = "\n".join(f"[{s.n}] {s.title} ({s.url})\n{' '.join(s.text[:300].split())}" for s in sources)
    return f"Question: {question}\n\nSources:\n{listing}"


def _sources_request(question: str, focus: str, sources: list[Source]) -> str:
    listing = "\n\n".join(f"[{s.n}] {s.title} ({s.url})\n{s.text[:SOURCE_CHARS]}" for s in sources)
    head = f"Question: {question}\n{focus}".rstrip()
    return f"{head}\n\nSources:\n\n{listing}"
