"""Searching notes and tasks: by words, by meaning when an embedding model is there, and by
near-miss title when no word matches.

Every way of finding ranks note ids; one query then turns a ranked page into hits with their
highlighted snippets, so a hit reads the same however it was found:

- **keyword**: PostgreSQL full text (``websearch_to_tsquery``: "quoted phrases", OR,
  -excluded) over titles, tags' words and bodies, ranked by ``ts_rank_cd`` (titles weigh most,
  then tags, then bodies) over a bounded set of candidates when a query's words are common
  (:mod:`.ranking`: the newest notes in windows, and the notes whose titles have the words);
- **hybrid**: the keyword ranking and the nearest notes by embedding fused by reciprocal rank,
  ``sum(1 / (60 + rank))``, so a note high in either list rises and one high in both rises
  most, without comparing incomparable scores; neighbours less than :data:`MIN_RELEVANCE`
  spreads above what the query scores against unrelated text are left out (every note is
  *some* distance away; the cut is calibrated per model, ``fable_core.assistant.calibration``);
- **typos**: when a first page finds fewer notes than it holds (none, or a few for a query
  with OR: a note found has every word of a query without), each word of the query that is not
  a word of the user's notes, nor shares its stem with one, is corrected to one of the most
  alike words their notes have used (:mod:`.vocabulary`): the corrected queries are searched in
  turn, best first, and the first that finds more is returned, the result saying ``corrected``
  (the next pages search it too, their cursor carries it). Other queries never pay for the
  question. When nothing is found either way, the titles most alike the query (trigrams) are
  returned instead.

Without an embedder, or while it is down, search is keyword-only and says ``mode="keyword"``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from functools import cache
from typing import Annotated, Any, Literal, TypeVar

from pydantic import Field, StringConstraints
from sqlalchemy import Float, Integer, Text, bindparam, column, func, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.sql import FromClause, Subquery

from fable_core.db.models import Note, title_key
from fable_core.errors import InvalidInput
from fable_core.knowledge.filters import check_refs, filter_params, note_filters
from fable_core.knowledge.listing import SUMMARY_COLUMNS, mark_shared
from fable_core.knowledge.plaintext import parsed_chars, plain_text
from fable_core.knowledge.ranking import keyword_ranking
from fable_core.knowledge.types import Kind, Tag, normalise_tag
from fable_core.knowledge.vectors import embedder_of, nearest, query_vector
from fable_core.knowledge.views import SearchResults
from fable_core.knowledge.vocabulary import respell
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import reach_of, readable
from fable_core.tools.paging import Cursor, decode_cursor, encode_cursor
from fable_core.tools.results import RowId

__all__ = ["MIN_RELEVANCE", "RRF_K", "rrf"]

RRF_K = 60
MIN_RELEVANCE = 1.5
SNIPPET_CHARS = 160
_BODY_START = parsed_chars(SNIPPET_CHARS)  # of a body read for a snippet without a match
_T = TypeVar("_T")
# matches between two private-use characters, which survive plain_text and then become ** **
_START, _STOP = "\ue000", "\ue001"
_HEADLINE = f"StartSel={_START},StopSel={_STOP},MaxWords=24,MinWords=8,MaxFragments=2,FragmentDelimiter= … "
_MATCHED = re.compile(f"{_START}([^{_START}{_STOP}]*){_STOP}")
_FRONT_MATTER = r"^---[ \t]*\n.*?\n---[ \t]*(\n|$)"  # (PostgreSQL's regular expressions: '.' takes newlines)
_LINK_REST = re.compile(r"!?\[|\]\([^)\s]*\)?")  # what a fragment cut out of a link leaves


@tool(group="notes", title="Search notes", scope="read", transaction="phases", route=Route("GET", "/search"))
async def search_notes(
    ctx: Context,
    query: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=500)],
    tag: Tag | None = None,
    kind: Kind = "all",
    project_id: RowId | None = None,
    limit: Annotated[int, Field(ge=1, le=50)] = 10,
    cursor: Cursor = None,
) -> SearchResults:
    """Search notes and tasks by words, best first, with snippets.

    Supports "quoted phrases", OR, -excluded words and tag:name; titles weigh most, then tags, then bodies.
    When few notes match, a word no note has is corrected (`corrected` shows the query used); with
    no match, near-miss titles are returned. With an embedding model, close meanings match too
    (`mode` "hybrid")."""
    query, tag = _tag_operator(query, tag)
    offset, corrected = _start(decode_cursor(cursor, "search"))
    vector, missed = await query_vector(ctx, query)  # remote: before the session
    async with ctx.reading():
        await check_refs(ctx, project_id=project_id)
        where = note_filters(tag=tag, kind=kind, project_id=project_id, status=None, priority=None,
                             milestone_id=None, parent_id=None, due_before=None, due_after=None)
        # the filters' values, bound by name: the statements are kept per shape
        bound = filter_params(tag=tag, kind=kind, project_id=project_id)
        shape = ("search", frozenset(bound), kind)
        reach = await reach_of(ctx.session, ctx.caller)
        words = _Words(query, corrected)
        few = limit if offset == 0 else 0  # fewer hits than this on a first page: correct the words
        if vector is not None:
            fused = await _hybrid(ctx, words, vector, where, bound, shape, depth=max(offset + limit + 1, 50), few=few)
            if fused:
                page = fused[offset: offset + limit + 1]
                hits = await _hits(ctx, page[:limit], words.params)
                return _results(words, "hybrid", hits, offset, limit, more=len(page) > limit)
        async def keyword() -> list[dict[str, Any]]:
            ranked = await keyword_ranking(ctx.session, ctx.caller, words.tsq, where, offset, limit + 1,
                                           params={**bound, **words.params}, shape=shape)
            return await _hits(ctx, ranked, words.params)
        hits = await words.correct(ctx, await keyword(), keyword, few=few)
        if not hits and offset == 0:
            near = _near_titles(query, [readable(Note, reach), *where], limit)
            hits = await _near_hits(ctx, near, {**bound, **words.params})
        return _results(words, "keyword", hits[:limit], offset, limit, more=len(hits) > limit, missed=missed)


_TAG_WORD = re.compile(r"(?<!\S)tag:(\S*)", re.IGNORECASE)


def _tag_operator(query: str, tag: str | None) -> tuple[str, str | None]:
    """``tag:name`` in the words, as the ``tag`` argument (one tag; the words without it)."""
    try:
        named = {normalise_tag(found) for found in _TAG_WORD.findall(query)} | ({tag} if tag else set())
    except ValueError as e:
        raise InvalidInput(f"{e} (in tag: of the query)", field="query") from e
    if not named:
        return query, tag
    if len(named) > 1:
        raise InvalidInput(f"a search takes one tag, not {', '.join(sorted(named))}", field="query")
    words = " ".join(_TAG_WORD.sub(" ", query).split())
    if not words:
        raise InvalidInput(f"tag:{next(iter(named))} alone is no search: list that tag's notes with list_notes "
                           "(tag), or add words", field="query")
    return words, next(iter(named))


def _start(position: list[Any] | None) -> tuple[int, str | None]:
    """Where a page starts (``[offset]``, or ``[offset, corrected query]`` when the first page
    searched a correction: the following pages search it too)."""
    if not position:
        return 0, None
    offset, corrected = position[0], position[1] if len(position) > 1 else None
    if type(offset) is not int or offset < 0 or not isinstance(corrected, str | None):
        raise InvalidInput("cursor is not valid for this listing; pass next_cursor from the same call unchanged",
                           field="cursor")
    return offset, corrected


# The query parsed, its text bound as ``q`` (``_Words.params``): statements that use it are built
# once per shape and run again with each query's text.
_TSQ = func.websearch_to_tsquery("english", bindparam("q", type_=Text))


class _Words:
    """The words a search looks for: the query's, or the query with its misspelt words corrected
    (after :meth:`respell`, or from a cursor), which ``corrected`` then holds. ``tsq`` is their
    tsquery, whose text ``params`` binds."""

    def __init__(self, query: str, corrected: str | None = None) -> None:
        self.query, self.corrected = query, corrected
        self.tsq: Any = _TSQ
        self.params = {"q": corrected or query}
        self._asked = corrected is not None
        self._alternatives = any(piece.lower() == "or" for piece in query.split())

    async def correct(self, ctx: Context, found: list[_T], search: Callable[[], Awaitable[list[_T]]], *,
                      few: int) -> list[_T]:
        """What the first of the query's respellings that finds more than it did finds, with
        ``corrected`` set to it, or ``found`` as it was. Asked once, only when fewer than ``few``
        were found and they do not prove every word occurs (a note found has every word of a
        query without OR)."""
        if len(found) >= few or self._asked or (found and not self._alternatives):
            return found
        self._asked = True
        for respelt in await respell(ctx.session, ctx.caller, self.query):
            self._use(respelt)
            fixed = await search()
            if len(fixed) > len(found):
                return fixed
        self._use(None)
        return found

    def _use(self, corrected: str | None) -> None:
        self.corrected = corrected
        self.params = {"q": corrected or self.query}


def _results(words: _Words, mode: Literal["keyword", "hybrid"], hits: list[dict[str, Any]], offset: int, limit: int, *,
             more: bool, missed: str | None = None) -> SearchResults:
    position = [offset + limit, *([words.corrected] if words.corrected else [])]
    return SearchResults.model_validate({
        "query": words.query, "mode": mode, "items": hits, "corrected": words.corrected, "keyword_only": missed,
        "next_cursor": encode_cursor("search", position) if more else None})


def rrf(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[tuple[int, float]]:
    """Fuse rankings of ids; best first, ties broken by the higher id (newer first)."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], -kv[0]))


def _near_titles(query: str, where: list[Any], limit: int) -> Subquery | None:
    key = title_key(query)
    if len(key) < 3:
        return None
    return (select(Note.id.label("id"), func.similarity(Note.title_key, key).label("score"))
            .where(*where, Note.title_key.op("%")(key))
            .order_by(Note.title_key.op("<->")(key), Note.id.desc()).limit(limit).subquery())


async def _hybrid(ctx: Context, words: _Words, vector: list[float], where: list[Any], bound: dict[str, Any],
                  shape: Any, *, depth: int, few: int) -> list[tuple[int, float]]:
    embedder = embedder_of(ctx)
    assert embedder is not None
    async def ranked() -> list[int]:
        return [note_id for note_id, _ in await keyword_ranking(
            ctx.session, ctx.caller, words.tsq, where, 0, depth, params={**bound, **words.params}, shape=shape)]
    keyword = await words.correct(ctx, await ranked(), ranked, few=few)
    semantic = await nearest(ctx.session, ctx.caller, vector, embedder.model, limit=depth,
                             where=where, min_similarity=embedder.similarity_at(vector, MIN_RELEVANCE))
    return rrf([keyword, [note_id for note_id, _ in semantic]])


# A ranked page computed in Python, as rows the hits query joins: two arrays unnested, bound as
# parameters, so the statement is built and compiled once (a VALUES list is compiled anew for
# every page: 3 ms a search).
_LISTED = (func.unnest(bindparam("page_ids", type_=ARRAY(Integer)), bindparam("page_scores", type_=ARRAY(Float)))
           .table_valued(column("id", Integer), column("score", Float)).render_derived(name="ranked"))


@cache
def _listed_hits() -> Any:
    """The hits statement over :data:`_LISTED`, built at the first search."""
    return _hits_statement(_LISTED)


def _hits_statement(ranked: FromClause) -> Any:
    """The notes of a ranked page (``id``, ``score``), best first: each one's summary columns
    (plain rows: building ORM objects for them cost more than the query), the start of its body,
    and its headline: the query's words highlighted where they occur."""
    headline = func.ts_headline("english", func.regexp_replace(func.left(Note.body, 20_000), _FRONT_MATTER, ""),
                                _TSQ, _HEADLINE)
    return (select(*SUMMARY_COLUMNS, func.left(Note.body, _BODY_START).label("body_start"),
                   ranked.c.score, headline.label("headline"))
            .join(ranked, ranked.c.id == Note.id).order_by(ranked.c.score.desc(), Note.id.desc()))


async def _hits(ctx: Context, page: list[tuple[int, float]], params: dict[str, Any]) -> list[dict[str, Any]]:
    """The notes of a ranked page, best first, each with its snippet."""
    if not page:
        return []
    ids, scores = zip(*page, strict=True)
    values = {**params, "page_ids": list(ids), "page_scores": list(scores)}
    rows = (await ctx.session.execute(_listed_hits(), values)).mappings().all()
    return await _as_hits(ctx, rows)


async def _near_hits(ctx: Context, ranked: FromClause | None, params: dict[str, Any]) -> list[dict[str, Any]]:
    """The notes of near-miss titles (``id``, ``score``), best first, with their snippets."""
    if ranked is None:
        return []
    return await _as_hits(ctx, (await ctx.session.execute(_hits_statement(ranked), params)).mappings().all())


async def _as_hits(ctx: Context, rows: Sequence[Any]) -> list[dict[str, Any]]:
    """Each row as a hit (the fields of a ``SearchHit``), its snippet the headline, else the
    start of the body; validated once, with the results."""
    hits = []
    for row in rows:
        hit = {name: value for name, value in row.items() if name not in ("body_start", "headline")}
        hit["snippet"] = _snippet(row["body_start"], row["headline"])
        hit["score"] = round(float(row["score"]), 5)
        hits.append(hit)
    return mark_shared(hits, await reach_of(ctx.session, ctx.caller))


def _snippet(body: str, headline: str | None) -> str:
    """The headline's fragments as plain text with the matches in ** **, else the body's start."""
    if headline and _START in headline:
        text = _MATCHED.sub(r"**\1**", _LINK_REST.sub("", plain_text(headline, 2 * SNIPPET_CHARS)))
        return text.replace(_START, "").replace(_STOP, "")
    return plain_text(body, SNIPPET_CHARS)
