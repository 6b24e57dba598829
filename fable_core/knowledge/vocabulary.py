"""The words each user's notes have used, and the correction of a search's misspelt words.

``note_words`` is a set of (user, word): every distinct word the user's titles and bodies have
had (lower case, 3 to 32 letters, English stop words left out: :data:`WORDS_CONFIG`). A write
adds the words of the text it stores, in its own transaction, and nothing else:

- a new note adds its words inside ``create_note``'s statement (:func:`add_cte`), and per batch
  for ``import_notes`` (:func:`add`);
- a changed title or body (an edit, a rename, a restore, the links a rename rewrites) adds the
  words of the notes' current versions (:func:`add`);
- deleting a note, or a word from one, changes nothing: the set is the words the user ever
  wrote (a superset of their notes' words), bounded by their distinct words, and a stale word
  costs nothing but a row.

Each addition is one ``INSERT .. SELECT .. ON CONFLICT DO NOTHING`` of the words the user does
not have yet: a word they have costs one probe of the primary key (an anti-join, half the cost
of an insert meeting the conflict) and takes no lock, so concurrent writes of one user never
wait for each other's words (counting notes per word made 8 concurrent create_note callers
queue on the counts of common words: a third fewer notes a second). Only two transactions
adding the *same new* word meet: the second waits for the first to end. The words of one
statement are inserted in their order, so two such statements cannot deadlock; a call adding
words twice (completing a recurring task while changing its body) could still meet another in
reverse order, and PostgreSQL then fails one of the two, as for any deadlock. Inserting every
word of a changed note, rather than the difference with its previous version, saves parsing the
previous text and costs one probe a word.

What it costs (20,000 synthetic notes for each of two users, 30,000 words each, a shared 2-core
machine, with and without interleaved): create_note about +0.5 ms (p50 4.5 vs 3.9 ms),
update_note with a new body +0.9 ms, edit_note +0.7 ms, delete_note nothing, import_notes
+0.2 ms a note (+20% a batch of 250): parsing the text is most of it. 8 concurrent create_note
callers of one user: no waits on known words, but the CPU the statement adds costs them 8-10%
of their rate on this machine (-20% while most words are new, each inserted in both indexes);
the bench's load (a fresh user, 4,000-word corpus) -1% for create_note, -6% for import_notes.

:func:`respell` is what ``search_notes`` asks when a query finds few notes: for each word of the
query that no word of the vocabulary shares its stem with, the :data:`CANDIDATES` most similar
words of the vocabulary (trigram similarity at least :data:`MIN_SIMILARITY`), all of a query's
words in one statement. It returns up to :data:`CANDIDATES` corrected queries, best first;
search uses the first that finds notes, so a word only deleted notes had is passed over for the
next candidate. A search that finds a page full, or finds anything for a query without OR (a
note found has all its words), never asks.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import Integer, Text, bindparam, exists, func, literal, select, true, union_all
from sqlalchemy.dialects.postgresql import ARRAY, insert
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import Note, NoteWord
from fable_core.tools.access import of_user, owned_by
from fable_core.tools.caller import Caller

__all__ = ["CANDIDATES", "MIN_SIMILARITY", "WORDS_CONFIG", "add", "add_cte", "respell"]

MIN_SIMILARITY = 0.4
"""How alike (pg_trgm similarity) a word of the vocabulary must be to a query's misspelt word to
replace it: "kitchn"/"kitchen" 0.5, "recipies"/"recipes" 0.55, "budgte"/"budget" 0.4, while
"kitchen"/"kitten" (0.36) stay apart."""

CANDIDATES = 3
"""How many words of the vocabulary a misspelt word may become, tried in turn (the most similar
first): the vocabulary keeps the words of deleted notes, so the closest word may find nothing."""

WORDS_CONFIG = "fable_words"
"""The text search configuration that splits a note into its words (migration 0011): the
``simple`` one (lower case, no stemming) without English stop words ("the", "with": never
searched, never a correction) and keeping words of letters only (no numbers, e-mail addresses
or URLs)."""

# a query's whitespace-separated piece: an optional quote or parenthesis and minus (NOT), the
# word, then closing punctuation
_PIECE = re.compile(r"""(?P<lead>["(]*-?["(]*)(?P<word>[^\W\d_]{3,32})(?P<tail>[").,;:!?]*)""")


def _new_words(user_id: Any, title: Any, body: Any) -> Any:
    """(``user_id``, ``word``): the words of a title and body that the vocabulary keeps (3 to 32
    letters; migration 0011 backfills with the same test) that the user's vocabulary does not
    have yet, as this statement sees it (a word added meanwhile is left alone by the insert)."""
    lexemes = func.unnest(func.tsvector_to_array(func.to_tsvector(WORDS_CONFIG, func.concat_ws(" ", title, body))))
    words = lexemes.table_valued("word").render_derived("words")
    known = NoteWord.__table__.alias("known")
    had = exists().where(of_user(known.c, user_id), known.c.word == words.c.word)
    return (select(user_id, words.c.word).join(words, true())
            .where(func.length(words.c.word).between(3, 32), ~had))


def _insert(rows: Any) -> Any:
    """Add ``rows`` (``user_id``, ``word``) to the vocabulary, those it has already left alone
    (no lock taken on them)."""
    return insert(NoteWord).from_select(["user_id", "word"], rows).on_conflict_do_nothing(
        index_elements=[NoteWord.user_id, NoteWord.word])


def add_cte(new: Any) -> Any:
    """Add the words of the note ``new`` (a CTE with its ``user_id``, ``title`` and ``body``),
    as a CTE for the statement that stores it."""
    rows = _new_words(new.c.user_id, new.c.title, new.c.body).select_from(new)
    return _insert(rows.order_by(rows.selected_columns.word)).cte("vocabulary")


# the new words of the notes :note_ids as they are now, each (user, word) once, in word order
_current = _new_words(Note.user_id, Note.title, Note.body).select_from(Note).where(
    Note.id == func.any(bindparam("note_ids", type_=ARRAY(Integer)))).subquery("current")
_ADD = _insert(select(_current.c.user_id, _current.c.word).distinct()
               .order_by(_current.c.word, _current.c.user_id))


async def add(session: AsyncSession, note_ids: list[int]) -> None:
    """Add the words of these notes as they are now (new, imported or changed: stored first)."""
    if note_ids:
        # on the connection: the ORM's bulk insert path does not take an INSERT .. SELECT
        await (await session.connection()).execute(_ADD, {"note_ids": note_ids})


async def respell(session: AsyncSession, caller: Caller, query: str) -> list[str]:
    """``query`` with each misspelt word replaced by a close word of the caller's vocabulary:
    up to :data:`CANDIDATES` such queries, the most similar words first (the second uses each
    word's second candidate, or its only one), none when no word is misspelt. Words after a
    minus (excluded), the operator ``or`` and words search ignores (stop words such as "the")
    are kept as they are."""
    pieces = [m for m in _PIECE.finditer(query)
              if _standalone(query, m) and "-" not in m.group("lead") and m.group("word").lower() != "or"]
    if not pieces:
        return []
    words = [m.group("word").lower() for m in pieces]
    rows = await session.execute(_corrections(caller, len(words)), {f"w{i}": w for i, w in enumerate(words)})
    found: dict[int, list[str]] = {}
    for i, word in rows:
        found.setdefault(i, []).append(word)
    tries = max((len(candidates) for candidates in found.values()), default=0)
    respelt = [_replaced(query, pieces, {i: c[min(k, len(c) - 1)] for i, c in found.items()}) for k in range(tries)]
    return list(dict.fromkeys(respelt))  # a word with one candidate repeats it: each query once


def _replaced(query: str, pieces: list[re.Match[str]], words: dict[int, str]) -> str:
    out, at = [], 0
    for i, m in enumerate(pieces):
        if i in words:
            out += [query[at:m.start("word")], words[i]]
            at = m.end("word")
    return "".join([*out, query[at:]])


def _standalone(query: str, m: re.Match[str]) -> bool:
    """Whether the match is a whole piece of the query (not part of "v2beta" or "e-mail")."""
    before = query[m.start() - 1] if m.start() else " "
    after = query[m.end()] if m.end() < len(query) else " "
    return before.isspace() and after.isspace()


def _corrections(caller: Caller, count: int) -> Any:
    """(position, word) rows for each of ``count`` words (``:w0``, ``:w1``, ...), best first:
    the words of the caller's vocabulary that may replace it, if it is a misspelling: a word
    search does not ignore (no stop word) and that no word of the vocabulary shares its English
    stem with ("recipe" is not corrected to "recipes": searched, both are "recip"; "cooking"
    finds the notes saying "cook", it is not corrected to "cookie").

    Everything is read from the trigram neighbours of the word in the vocabulary (``word %
    :w``, similarity 0.3 and more by pg_trgm's default): words of one stem share most of their
    trigrams (cook/cooking 0.44, run/running 0.33). Asking the notes whether a word finds any
    instead costs a scan of all the caller's notes when the plan is a generic one (250 ms at
    20,000 notes). One SELECT per word, each with its word as a parameter."""
    return union_all(*(select(_candidates(caller, i)) for i in range(count)))


def _candidates(caller: Caller, i: int) -> Any:
    typed = bindparam(f"w{i}", type_=Text)
    searched = func.plainto_tsquery("english", typed)  # empty for a stop word
    similarity = func.similarity(NoteWord.word, typed)
    near = (select(NoteWord.word, similarity.label("similarity"))
            .where(owned_by(NoteWord, caller), NoteWord.word.op("%")(typed)).cte(f"near_{i}"))
    known = exists().where(func.plainto_tsquery("english", near.c.word) == searched)
    closest = (select(literal(i).label("position"), near.c.word)
               .where(near.c.similarity >= MIN_SIMILARITY, func.numnode(searched) > 0, ~known)
               .order_by(near.c.similarity.desc(),
                         func.abs(func.length(near.c.word) - func.length(typed)), near.c.word)
               .limit(CANDIDATES))
    return closest.subquery(f"candidates_{i}")
