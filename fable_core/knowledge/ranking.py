"""The keyword ranking: the notes that have a query's words, best first, without ranking every
note that has them.

Ranking is ``ts_rank_cd`` on the search vector (:data:`WEIGHTS`: title, tags, body), and
ranking a note means reading its vector: at 100k notes a word in half of them took 250-400 ms
to rank in full, though the first page shows ten. So a query is ranked in one of two ways,
decided by how many of the newest notes (a window, :class:`Bounds`) have its words (the same for every page
of a query, so pages never overlap or skip):

- **few** (fewer than 1% of them, or a vault no larger than a window): every match is
  ranked, through the search vector's GIN index, when there are at most 2,000 (a word rare
  among recent notes can be in thousands of old ones: at 1M notes those took 50 ms to rank);
- **many**: the notes are taken newest first (last updated) in windows that double in size
  (2,000 notes, then 4,000, ...): the matches within a window are ranked, and a window's come
  before the next one's. Matches whose title has one of the query's words (up to 200,
  through the index on ``title_vector``) join the first window whatever their age, so a note
  named by the query is never buried under recent notes that only mention it.

Reading a window is one index scan of a bounded number of rows whatever the words, so a common
word costs what a rare one does. The cost is the ranking's, for common words only: a match old
enough to lie beyond the first window and whose title does not have one of the query's words
ranks after the first window's, however often it says them.

A quoted phrase is first looked for as its words (the index stores no positions, so every
note with them would be read to test the phrase), which decides the way; windows then keep
only the notes with the phrase, so a phrase of common words is found without reading every
note with those words.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import REAL, Text, and_, case, cast, func, literal, select, true, union_all
from sqlalchemy.dialects.postgresql import ARRAY, TSQUERY, aggregate_order_by
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import Note
from fable_core.knowledge.filters import once
from fable_core.tools.access import Reach, reach_of, reach_parts, readable, readable_param
from fable_core.tools.caller import Caller

__all__ = ["BOUNDS", "WEIGHTS", "Bounds", "keyword_ranking"]

# D (unused), C body, B tags, A title: a title word counts for two and a half in the body
WEIGHTS = [0.1, 0.4, 0.6, 1.0]


@dataclass(frozen=True)
class Bounds:
    """How much a ranking reads: measured at 100k notes (``bench.search``), a window of 2,000
    costs about 2.5 ms to read and 2 ms more to rank when half of it matches."""

    window: int = 2000  # notes in the first window
    common: int = 20  # notes with the query's words in the first window from which it is ranked by windows (1%)
    titled: int = 200  # matches by title joined to the first window
    every: int = 2000  # the most matches ranked in full; a word rare among the newest notes may not be in all


BOUNDS = Bounds()
_PHRASE = "<(-|[0-9]+)>"


@dataclass(frozen=True)
class _Query:
    """A tsquery three ways: as written; as the words the index looks up (``querytree``:
    excluded words dropped, phrases as AND; NULL when there are none, as for ``-word``
    alone); and as any of its words (for titles)."""

    exact: Any
    words: Any
    any_word: Any

    @classmethod
    def of(cls, tsq: Any) -> _Query:
        written = cast(tsq, Text)
        indexed = func.nullif(cast(func.querytree(tsq), Text), "T")  # NULL: no word to look up (-x alone)
        return cls(once(tsq), once(cast(func.regexp_replace(indexed, _PHRASE, "&", "g"), TSQUERY)),
                   once(cast(func.translate(func.regexp_replace(written, f"{_PHRASE}|&", "|", "g"), "!", ""),
                              TSQUERY)))


def _rank(query: _Query, vector: Any = Note.search_vector) -> Any:
    return func.ts_rank_cd(literal(WEIGHTS, ARRAY(REAL)), vector, query.exact, 1)


async def keyword_ranking(session: AsyncSession, caller: Caller, tsq: Any, where: list[Any], start: int,
                          count: int, bounds: Bounds = BOUNDS, *, params: dict[str, Any] | None = None,
                          shape: Hashable | None = None) -> list[tuple[int, float]]:
    """Positions ``start`` to ``start + count`` of the ranking of the notes matching ``tsq``
    and ``where`` (fewer at its end), as ``(id, score)``.

    ``params`` are the values of the bind parameters ``tsq`` and ``where`` leave unbound. Given a
    ``shape`` (naming ``tsq`` and ``where`` as they are built: equal shapes, equal expressions),
    the statements are built once per shape and caller kind (owner only, or with shares) and run
    again with new values: building them and their cache keys cost a search about 5 ms."""
    want = start + count
    reach = await reach_of(session, caller)
    ranking = _Ranking(session, reach, tsq, where, {**(params or {}), **reach.params()}, shape)
    first = await ranking.window(0, bounds.window)
    if first.seen < bounds.window:  # the whole vault was one window: ranked in full
        return first.ranked[start:want]
    if first.words < bounds.common:
        every = await ranking.every_match(bounds.every)
        if every is not None:
            return every[start:want]
    titled = await ranking.titled(bounds.titled)
    ranked = sorted({**dict(first.ranked), **titled}.items(), key=lambda kv: (-kv[1], -kv[0]))
    window = first
    while len(ranked) < want and window.seen == window.size:
        window = await ranking.window(window.offset + window.size, window.size * 2)
        ranked += [(note_id, score) for note_id, score in window.ranked if note_id not in titled]
    return ranked[start:want]


# Statements by (kind, shape), for an owner-only caller and shapes whose values are all bind
# parameters; a caller with shares has theirs bound into the statement (reach_parts) and builds
# them anew.
_STATEMENTS: dict[tuple[tuple[Any, ...], Hashable], Any] = {}


class _Ranking:
    """One ranking's statements: reused from :data:`_STATEMENTS` when the shape allows."""

    def __init__(self, session: AsyncSession, reach: Reach, tsq: Any, where: list[Any], params: dict[str, Any],
                 shape: Hashable | None) -> None:
        self.session, self.reach, self.tsq, self.where, self.params = session, reach, tsq, where, params
        self.shape = shape if reach.alone else None
        self._query: _Query | None = None

    @property
    def query(self) -> _Query:
        if self._query is None:
            self._query = _Query.of(self.tsq)
        return self._query

    def _statement(self, kind: tuple[Any, ...], build: Callable[[], Any]) -> Any:
        if self.shape is None:
            return build()
        key = (kind, self.shape)
        found = _STATEMENTS.get(key)
        if found is None:
            found = build()
            if len(_STATEMENTS) < 256:
                _STATEMENTS[key] = found
        return found

    def _readable(self) -> Any:
        return readable_param(Note, True) if self.shape is not None else readable(Note, self.reach)

    async def window(self, offset: int, size: int) -> _Window:
        statement = self._statement(("window", offset, size), lambda: _window_statement(
            self.reach, self.query, self.where, self._readable() if self.shape is not None else None, offset, size))
        row = (await self.session.execute(statement, self.params)).one()
        seen, words, ids, scores = row
        return _Window(offset, size, seen, words, list(zip(ids or [], scores or [], strict=True)))

    async def every_match(self, most: int) -> list[tuple[int, float]] | None:
        statement = self._statement(("every", most), lambda: _every_match_statement(
            self.query, [self._readable(), *self.where], most))
        found, ids, scores = (await self.session.execute(statement, self.params)).one()
        if found > most:
            return None
        return list(zip(ids or [], scores or [], strict=True))

    async def titled(self, limit: int) -> dict[int, float]:
        statement = self._statement(("titled", limit), lambda: _titled_statement(
            self.query, [self._readable(), *self.where], limit))
        rows = await self.session.execute(statement, self.params)
        return {note_id: float(score) for note_id, score in rows}


@dataclass(frozen=True)
class _Window:
    offset: int
    size: int
    seen: int  # notes in the window (fewer than its size at the oldest end)
    words: int  # of them, those with the query's words (phrases aside)
    ranked: list[tuple[int, float]]  # of them, those that match, best first


def _window_statement(reach: Reach, query: _Query, where: list[Any], owned: Any | None, offset: int,
                      size: int) -> Any:
    """The notes ``offset`` to ``offset + size``, newest first, and their matches ranked: one
    backward scan of the owner's (updated_at, id) index (and of each shared project's). The
    filters are tested on the rows the window holds, so a window costs the same whatever they
    select. ``owned``: the owner's predicate with its value left to bind (else the reach's own,
    bound)."""
    vector = Note.search_vector
    kept = and_(true(), *where)
    matches = and_(kept, vector.op("@@")(query.exact))
    # narrow rows: the vectors are read and tested before the sort, which then moves ids and
    # scores only (a small vault is read by a sequential scan and sorted: wide rows spilled to disk)
    columns = (Note.id, Note.updated_at, and_(kept, func.coalesce(vector.op("@@")(query.words), True)).label("words"),
               case((matches, _rank(query, vector))).label("score"))
    newest_first = (Note.updated_at.desc(), Note.id.desc())
    # offset and size stay literals: a prepared statement's generic plan could not see a bound LIMIT
    if reach.alone:
        newest = (select(*columns).where(owned if owned is not None else readable(Note, reach))
                  .order_by(*newest_first).offset(offset).limit(size))
    else:  # the newest of each part, then the newest of those
        parts = union_all(*reach_parts(reach, lambda scope: select(*columns).where(scope).order_by(*newest_first)
                                       .limit(offset + size))).subquery()
        newest = select(parts).order_by(parts.c.updated_at.desc(), parts.c.id.desc()).offset(offset).limit(size)
    window = newest.subquery()
    found = window.c.score.is_not(None)
    return select(
        func.count(),
        func.count().filter(window.c.words),
        func.array_agg(aggregate_order_by(window.c.id, window.c.score.desc(), window.c.id.desc())).filter(found),
        func.array_agg(aggregate_order_by(window.c.score, window.c.score.desc(), window.c.id.desc())).filter(found),
    )


def _titled_statement(query: _Query, where: list[Any], limit: int) -> Any:
    """Up to ``limit`` matches with one of the query's words in their title, any age (in
    table order: their rank sorts them)."""
    titled = (select(Note.id).where(*where, Note.title_vector.op("@@")(query.any_word))
              .limit(limit).subquery())
    return (select(Note.id, _rank(query)).join(titled, titled.c.id == Note.id)
            .where(Note.search_vector.op("@@")(query.exact)))


def _every_match_statement(query: _Query, where: list[Any], most: int) -> Any:
    """Every match ranked, up to one more than ``most`` (more, and windows rank them: a word in
    few of the newest notes can still be in thousands of older ones)."""
    matches = (select(Note.id, Note.search_vector).where(*where, Note.search_vector.op("@@")(query.exact))
               .limit(most + 1).subquery())
    score = _rank(query, matches.c.search_vector)
    return select(
        func.count(),
        func.array_agg(aggregate_order_by(matches.c.id, score.desc(), matches.c.id.desc())),
        func.array_agg(aggregate_order_by(score, score.desc(), matches.c.id.desc())),
    )
