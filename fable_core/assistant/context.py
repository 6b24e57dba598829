"""What the model is told besides the conversation: relevant notes, attached notes, fetched URLs.

Retrieval (RAG) embeds the user's message and looks among the notes the conversation's scope
allows (``rag_project_id``: NULL → notes outside projects, -1 → all, an id → that project).
How close is close is calibrated per embedding model (:mod:`.calibration`): a note whose
similarity lies at least 3 spreads above what the message scores against unrelated text is
injected (at most 3 notes, 800 characters each), 2 to 3 spreads is only *suggested* to the user
(the ``context`` event); notes the user attached go in whole, and the note being edited is never
its own context. URLs in the message are fetched through the SSRF
guard and their text (summarised when long) joins the context.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from fable_core.assistant.providers.base import Provider
from fable_core.db.models import Note
from fable_core.errors import FableError, NotFound
from fable_core.infra import ssrf
from fable_core.infra.pages import read_page
from fable_core.knowledge.vectors import QueryEmbedder, nearest
from fable_core.tools.access import reach_of, readable
from fable_core.tools.caller import Caller

__all__ = ["ContextPack", "add_urls", "build_context", "find_urls"]

INJECT_RELEVANCE = 3.0  # spreads above the message's baseline (see calibration)
SUGGEST_RELEVANCE = 2.0
MAX_INJECTED = 3
INJECT_CHARS = 800
MAX_URLS = 2
URL_CHARS = 3000
Connectable = AsyncSession | AsyncConnection  # Core statements only: either runs them
# A URL ends at whitespace, quotes, angle brackets, parentheses and square brackets, except that
# a bracketed IPv6 host (``http://[::1]:8080/``) is taken whole; a final full stop is the sentence's.
_URL = re.compile(r"""
    https?://
    (?:[^\s<>"'()\[\]/?#]*@)?                       # userinfo
    (?:\[[0-9A-Za-z:.%_~-]+\]|[^\s<>"'()\[\]/?#]+)  # host: [IPv6], or a name or IPv4 (and :port)
    [^\s<>"'()\[\]]*                                # port, path, query, fragment
    (?<![.,;:!?])                                   # a sentence's full stop is not the URL's
""", re.VERBOSE)


@dataclass
class ContextPack:
    """The system-prompt additions and what the UI is told about them."""

    blocks: list[str] = field(default_factory=list)
    used: list[dict[str, Any]] = field(default_factory=list)
    suggested: list[dict[str, Any]] = field(default_factory=list)
    attached: list[dict[str, Any]] = field(default_factory=list)
    urls: list[dict[str, Any]] = field(default_factory=list)

    def meta(self) -> dict[str, Any]:
        return {"used": self.used, "suggested": self.suggested, "attached": self.attached, "urls": self.urls}


# Retrieval runs before every answer: its clauses are built once, with bound parameters, so the
# statement is too (see ``embeddings.nearest``).
_NOT_EXCLUDED = Note.id.not_in(bindparam("excluded", expanding=True))
_SCOPES: dict[str, tuple[Any, ...]] = {
    "outside": (Note.project_id.is_(None), _NOT_EXCLUDED),
    "all": (_NOT_EXCLUDED,),
    "project": (Note.project_id == bindparam("project_id"), _NOT_EXCLUDED),
}
_EXCERPT = (Note.title, func.left(Note.body, INJECT_CHARS + 1))


def _scope(rag_project_id: int | None) -> tuple[Any, ...]:
    if rag_project_id is None:
        return _SCOPES["outside"]
    return _SCOPES["all"] if rag_project_id == -1 else _SCOPES["project"]


async def build_context(
    session: Connectable, caller: Caller, vector: list[float] | None, *, rag_project_id: int | None,
    note_ids: list[int], exclude_note_id: int | None, embedder: QueryEmbedder | None,
) -> ContextPack:
    """Attached notes, then the notes retrieved for the message's embedding ``vector`` (None:
    no retrieval, e.g. no embedder or it is down)."""
    pack = ContextPack()
    await _attach(session, caller, pack, note_ids)
    excluded = set(note_ids) | ({exclude_note_id} if exclude_note_id else set())
    if vector is not None and embedder is not None:
        await _retrieve(session, caller, pack, vector, embedder, rag_project_id, excluded)
    return pack


async def add_urls(pack: ContextPack, text: str, provider: Provider, allow: tuple[str, ...] = ()) -> None:
    """Fetch the URLs in ``text`` (at most two) through the SSRF guard into ``pack``."""
    for url in find_urls(text)[:MAX_URLS]:
        await _fetch_url(pack, url, provider, allow)


def find_urls(text: str) -> list[str]:
    """The distinct http(s) URLs in ``text``, in order of appearance."""
    return list(dict.fromkeys(_URL.findall(text)))


async def _attach(session: Connectable, caller: Caller, pack: ContextPack, note_ids: list[int]) -> None:
    if not note_ids:
        return
    notes = {n.id: n for n in (await session.execute(
        select(Note.id, Note.title, Note.body).where(Note.id.in_(note_ids),
                                                     readable(Note, await reach_of(session, caller)))))}
    missing = [i for i in note_ids if i not in notes]
    if missing:
        raise NotFound(f"note {missing[0]} not found", note_id=missing[0])
    for note_id in note_ids:
        note = notes[note_id]
        pack.blocks.append(f"Attached note [[{note.title}]] (id {note.id}):\n{note.body}")
        pack.attached.append({"id": note.id, "title": note.title})


async def _retrieve(session: Connectable, caller: Caller, pack: ContextPack, vector: list[float],
                    embedder: QueryEmbedder, rag_project_id: int | None, excluded: set[int]) -> None:
    inject = embedder.similarity_at(vector, INJECT_RELEVANCE)
    hits = await nearest(session, caller, vector, embedder.model, limit=8, where=_scope(rag_project_id),
                         min_similarity=embedder.similarity_at(vector, SUGGEST_RELEVANCE), columns=_EXCERPT,
                         params={"excluded": sorted(excluded) or [0], "project_id": rag_project_id})
    for note_id, similarity, title, body in hits:
        entry = {"id": note_id, "title": title, "similarity": round(similarity, 3)}
        if similarity >= inject and len(pack.used) < MAX_INJECTED:
            excerpt = body[:INJECT_CHARS] + ("…" if len(body) > INJECT_CHARS else "")
            pack.blocks.append(f"Relevant note [[{title}]] (id {note_id}):\n{excerpt}")
            pack.used.append(entry)
        elif similarity < inject:
            pack.suggested.append(entry)


async def _fetch_url(pack: ContextPack, url: str, provider: Provider, allow: tuple[str, ...]) -> None:
    try:
        page = await ssrf.fetch(url, allow_first_hop=allow)
        text = await page_text(page.text) if "html" in page.content_type else page.text
        if len(text) > URL_CHARS:
            text = await _summarise(provider, url, text)
    except FableError as e:
        pack.urls.append({"url": url, "ok": False, "error": e.message})
        return
    pack.blocks.append(f"Content of {url}:\n{text}")
    pack.urls.append({"url": url, "ok": True, "chars": len(text)})


async def _summarise(provider: Provider, url: str, text: str) -> str:
    try:
        return await provider.complete([
            {"role": "system", "content": "Summarise this web page in at most 300 words, keeping facts, "
                                          "names and numbers."},
            {"role": "user", "content": f"{url}\n\n{text[:20_000]}"},
        ], max_tokens=500)
    except FableError:
        return text[:URL_CHARS] + "…"


async def page_text(markup: str) -> str:
    """Readable text of an HTML page, whitespace collapsed: the research reader's (linear in the
    markup and off the event loop; a regex here was quadratic on a page of 12,000 ``<script``)."""
    return re.sub(r"\s+", " ", (await read_page(markup, limit=200_000)).text).strip()
