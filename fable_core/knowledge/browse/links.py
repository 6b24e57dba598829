"""``suggest_links``: the notes a note could link to, found by what it says, not only by titles.

Two kinds, in this order, none the note links to already (by a stored link or a ``[[title]]``
in its body) and none the caller cannot read:

- **mentions**: notes whose title or alias is written in the body without a link, in the
  order the body first names them. The body's prose (code and links left out, its first
  :data:`MAX_SCAN` characters) is cut into runs of up to :data:`MAX_WORDS` title-key words (a
  long body has thousands), and the caller's notes whose title key or an alias equals one are
  found by a hashed ``= ANY`` over them, not by probing an index once a run. Runs shorter than
  :data:`MIN_KEY` characters are no mention ("to", "a").
- **close notes**: with an embedding model and the note's stored embedding under it, the nearest
  notes whose similarity lies at least :data:`RELATED` spreads above what the note scores against
  unrelated text (``fable_core.assistant.calibration``); without either, the notes that share
  the note's most frequent words (full-text ranking, ``mode`` "keyword").
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Annotated, Any

from pydantic import Field
from sqlalchemy import Text, bindparam, case, exists, func, literal, select
from sqlalchemy.dialects.postgresql import ARRAY

from fable_core.db.models import Note, NoteEmbedding, NoteLink, title_key
from fable_core.knowledge import wikilinks
from fable_core.knowledge.browse.views import LinkSuggestion, LinkSuggestions
from fable_core.knowledge.codespans import prose
from fable_core.knowledge.ranking import keyword_ranking
from fable_core.knowledge.types import NoteId
from fable_core.knowledge.vectors import embedder_of, nearest
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import get_visible, reach_of, readable
from fable_core.tools.paging import Cursor, decode_offset, encode_cursor

__all__ = ["MAX_SCAN", "MAX_WORDS", "MIN_KEY", "RELATED", "suggest_links"]

MAX_SCAN = 20_000  # characters of a body read for mentions
MAX_WORDS = 6  # the longest title, in words, looked for in a body
MIN_KEY = 3  # characters a mentioned title key has at least
RELATED = 2.0  # spreads above unrelated text a close note lies (the chat suggests notes at 2.0 too)
DEPTH = 50  # suggestions of each kind ranked at most
KEYWORDS = 8  # the note's most frequent words a keyword search for close notes asks for

_KIND = func.coalesce(Note.entity, case((Note.status.is_(None), "note"), else_="task"))
_LINKS = re.compile(r"!?\[\[[^\]\n]*\]\]|\[[^\]\n]*\]\([^)\n]*\)|https?://\S+")
_WORDS = re.compile(r"[^\W\d_]{4,}")
_OTHER = Note.id != bindparam("_self")  # module level: nearest() caches statements by clause identity
_STOP = frozenset({"about", "after", "again", "also", "been", "before", "being", "between", "both", "could",
    "does", "doing", "down", "during", "each", "from", "further", "have", "having", "here", "into", "just",
    "like", "more", "most", "much", "only", "other", "over", "same", "should", "some", "such", "than", "that",
    "their", "them", "then", "there", "these", "they", "this", "those", "through", "under", "until", "very",
    "were", "what", "when", "where", "which", "while", "will", "with", "would", "your", "yours"})


@tool(group="notes", title="Suggest notes to link", scope="read",
      route=Route("GET", "/notes/{note_id}/link-suggestions"))
async def suggest_links(
    ctx: Context, note_id: NoteId, limit: Annotated[int, Field(ge=1, le=50)] = 10, cursor: Cursor = None,
) -> LinkSuggestions:
    """Notes this note could link to: ones it names without a [[link]], then ones close in meaning."""
    offset = decode_offset(cursor, "link-suggestions")
    note = await get_visible(ctx.session, Note, note_id, ctx.caller)
    linked_ids = set((await ctx.session.scalars(
        select(NoteLink.target_id).where(NoteLink.source_id == note.id, NoteLink.target_id.is_not(None)))).all())
    linked_keys = set(wikilinks.parse_links(note.body))

    def fresh(row: Any) -> bool:
        return (row.id != note.id and row.id not in linked_ids and row.title_key not in linked_keys
                and not linked_keys.intersection(row.alias_keys or ()))

    found: dict[int, LinkSuggestion] = {}
    for row, mention in await _mentions(ctx, note.body):
        if fresh(row) and row.id not in found:
            found[row.id] = LinkSuggestion(id=row.id, title=row.title, kind=row.kind, reason="mention",
                                           mention=mention)
    close, mode = await _close(ctx, note)
    for row in close:
        if fresh(row) and row.id not in found:
            found[row.id] = LinkSuggestion(id=row.id, title=row.title, kind=row.kind, reason="close")
    items = list(found.values())
    more = len(items) > offset + limit
    return LinkSuggestions(items=items[offset: offset + limit], mode=mode,
                           next_cursor=encode_cursor("link-suggestions", [offset + limit]) if more else None)



def mention_keys(body: str) -> dict[str, int]:
    """Each run of up to :data:`MAX_WORDS` title-key words of ``body``'s prose (no code, no
    links, no addresses), mapped to the word it first starts at."""
    keys: dict[str, int] = {}
    at = 0
    for segment in _LINKS.split(prose(body[:MAX_SCAN])):
        for line in segment.splitlines():
            words = title_key(line).split()
            for i in range(len(words)):
                for n in range(1, min(MAX_WORDS, len(words) - i) + 1):
                    key = " ".join(words[i:i + n])
                    if len(key) >= MIN_KEY:
                        keys.setdefault(key, at + i)
            at += len(words)
    return keys


async def _mentions(ctx: Context, body: str) -> list[tuple[Any, str]]:
    """The readable notes whose title or alias ``body`` names, each with the words that name it,
    in the order the body first names them."""
    keys = mention_keys(body)
    if not keys:
        return []
    scope = readable(Note, await reach_of(ctx.session, ctx.caller))
    # a title key or an alias = ANY(the runs), hashed, over the caller's notes: the indexes would be
    # probed once for each of thousands of runs (the trigram GiST's "=" took 5 s at 10,000 notes,
    # the aliases' GIN 80 ms)
    wanted = bindparam("grams", sorted(keys), type_=ARRAY(Text))
    columns = (Note.id, Note.title, _KIND.label("kind"), Note.title_key, Note.alias_keys)
    titled = (await ctx.session.execute(
        select(*columns).where(scope, func.concat(Note.title_key, "") == func.any(wanted)))).all()
    alias = func.unnest(Note.alias_keys).table_valued("value").render_derived(name="alias")
    aliased = (await ctx.session.execute(select(*columns).where(scope, Note.alias_keys.is_not(None), exists(
        select(literal(1)).select_from(alias).where(alias.c.value == func.any(wanted)))))).all()
    named = [(row, row.title_key) for row in titled]
    for row in aliased:
        first = min((k for k in row.alias_keys if k in keys), key=keys.__getitem__)
        named.append((row, first))
    return sorted(named, key=lambda pair: (keys[pair[1]], pair[0].id))


async def _close(ctx: Context, note: Note) -> tuple[list[Any], Any]:
    """Notes close to ``note`` (best first) and how they were found: "semantic" or "keyword"."""
    columns = (Note.id, Note.title, _KIND.label("kind"), Note.title_key, Note.alias_keys)
    embedder = embedder_of(ctx)
    if embedder is not None:
        vector = await ctx.session.scalar(select(NoteEmbedding.embedding).where(
            NoteEmbedding.note_id == note.id, NoteEmbedding.model == embedder.model))
        if vector is not None:
            vector = [float(x) for x in vector]
            hits = await nearest(ctx.session, ctx.caller, vector, embedder.model, limit=DEPTH, where=(_OTHER,),
                                 min_similarity=embedder.similarity_at(vector, RELATED), params={"_self": note.id})
            return await _rows(ctx, columns, [hit[0] for hit in hits]), "semantic"
    words = _keywords(note.title, note.body)
    if not words:
        return [], "keyword"
    tsq = func.websearch_to_tsquery("english", " OR ".join(words))
    ranked = await keyword_ranking(ctx.session, ctx.caller, tsq, [Note.id != note.id], 0, DEPTH)
    return await _rows(ctx, columns, [note_id for note_id, _ in ranked]), "keyword"


async def _rows(ctx: Context, columns: tuple[Any, ...], ids: list[int]) -> list[Any]:
    if not ids:
        return []
    rows = {row.id: row for row in await ctx.session.execute(select(*columns).where(Note.id.in_(ids)))}
    return [rows[i] for i in ids if i in rows]


def _keywords(title: str, body: str) -> list[str]:
    """The note's most frequent words of four letters or more, bar the commonest English ones."""
    text = f"{title}\n{_LINKS.sub(' ', prose(body[:MAX_SCAN]))}".casefold()
    counts = Counter(w for w in _WORDS.findall(text) if w not in _STOP)
    return [word for word, _ in counts.most_common(KEYWORDS)]
