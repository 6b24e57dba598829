"""``suggest_titles``: notes by title as it is typed, for the quick switcher and ``[[`` completion.

Four tiers, each one index scan limited to the page: the same title key
(the ``(user_id, title_key)`` btree, by :func:`~fable_core.knowledge.matching.same_key`), title
keys starting with the typed key (the same btree: its ``text_pattern_ops`` answer ``LIKE 'k%'``),
title keys with a word starting with it, and title keys with a word like it (pg_trgm's word
similarity, ``%>``; these two on the trigram GiST index). Shorter titles first within the first
three tiers ("Meeting" before "Meeting notes 2026"), the most similar first in the last. The
first three are one statement; the last, a nearest-first scan of the trigram index that costs
most, is a second one asked only when the first leaves the page short. At 10,000 notes a call
through the dispatcher takes about 20 ms at the reference speed (``bench/ui_browse.py``; the
``[[`` completion's target is 150 ms).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints
from sqlalchemy import and_, case, func, literal, not_, select, union_all

from fable_core.db.models import Note, title_key
from fable_core.knowledge.browse.views import TitleMatch, TitleMatches
from fable_core.knowledge.filters import escape_like
from fable_core.knowledge.matching import same_key
from fable_core.knowledge.types import MAX_TITLE
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import reach_of, readable

__all__ = ["TIERS", "suggest_titles"]

TIERS: tuple[Literal["exact", "prefix", "word", "similar"], ...] = ("exact", "prefix", "word", "similar")

_KIND = func.coalesce(Note.entity, case((Note.status.is_(None), "note"), else_="task"))


@tool(group="notes", title="Suggest note titles", scope="read", route=Route("GET", "/titles"))
async def suggest_titles(
    ctx: Context,
    text: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TITLE)],
    limit: Annotated[int, Field(ge=1, le=50)] = 10,
) -> TitleMatches:
    """Notes whose title matches `text`: equal, then starting with it, then a word starting with it, then similar."""
    key = title_key(text)
    if not key:
        return TitleMatches(items=[])
    scope = readable(Note, await reach_of(ctx.session, ctx.caller))
    rows = list((await ctx.session.execute(_statement(scope, key, limit, similar=False))).all())
    if len(rows) < limit:  # the nearest-first trigram scan costs most: only when the page is not full
        rows += (await ctx.session.execute(_statement(scope, key, limit - len(rows), similar=True))).all()
    return TitleMatches(items=[TitleMatch(id=r.id, title=r.title, kind=r.kind, match=TIERS[r.tier]) for r in rows])


def _statement(scope: Any, key: str, limit: int, *, similar: bool) -> Any:
    """The first three tiers, or (``similar``) the last."""
    starts = Note.title_key.like(f"{escape_like(key)}%")
    word = Note.title_key.like(f"% {escape_like(key)}%")

    def tier(number: int, where: Any, *order: Any) -> Any:
        return (select(Note.id, Note.title, _KIND.label("kind"), literal(number).label("tier"),
                       func.row_number().over(order_by=order).label("rank"))
                .where(scope, where).order_by(*order).limit(limit))

    if similar:
        return tier(3, and_(Note.title_key.op("%>")(key), not_(starts), not_(word)),
                    Note.title_key.op("<->>")(key), Note.id)
    shortest = (func.length(Note.title_key), Note.title_key, Note.id)
    tiers = union_all(
        tier(0, same_key(Note.title_key, key), Note.updated_at.desc(), Note.id.desc()),
        tier(1, and_(starts, Note.title_key != key), *shortest),
        tier(2, and_(word, not_(starts)), *shortest),
    ).subquery()
    return select(tiers).order_by(tiers.c.tier, tiers.c.rank).limit(limit)
