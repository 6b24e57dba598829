"""The words of each user's notes, counted, and the correction of a search's misspelt words.

``note_words`` holds, per user, every distinct word of their notes' titles and bodies (lower
case, 3 to 32 letters, English stop words left out: :data:`WORDS_CONFIG`) with the number of
notes that have it. It changes in the transaction that changes the notes:

- a new note counts its words: inside ``create_note``'s statement (:func:`count_cte`), and per
  batch for ``import_notes`` (:func:`count`);
- a changed title or body (an edit, a rename, a restore, the links a rename rewrites) counts the
  words it gained and uncounts the ones it lost since the version before (:func:`recount`);
- a note deleted uncounts its words before it goes (:func:`uncount`); a word no note has any
  more is deleted.

Every change is one ``INSERT .. ON CONFLICT DO UPDATE`` adding a (possibly negative) number of
notes to each word, in the order of the words: two transactions of one user changing the same
words lock them in the same order, and wait for each other instead of deadlocking (a call that
counts twice, such as completing a recurring task while editing its body, could still meet
another in reverse: PostgreSQL then fails one of the two). A word at zero is then deleted, by a
second statement only when there is one.

What it costs (measured with 20,000 synthetic notes for each of two users, 30,000 words each,
on a 2-core machine): about 1 ms more a create_note, 2 ms an edit_note or delete_note, 4 ms an
update_note replacing a whole body, 0.45 ms a note of import_notes (a batch of 250: +40%). A
user's concurrent writes also queue on the counts of the words their notes share, from the
statement that counts them to the commit: 8 concurrent create_note calls of one user made a
third fewer notes a second. (Spreading each count over 8 rows by note id got a third of that
back, for 8 times the rows and a slower correction: not done.)

:func:`respell` is what ``search_notes`` asks when a query finds few notes: each word of the
query that no word of the caller's vocabulary shares its stem with becomes the most similar
word of the vocabulary (trigram similarity at least :data:`MIN_SIMILARITY`; on a tie, the word
more notes have), all of a query's words in one statement (about 5 ms at 20,000 notes). A
search that finds a page full, or finds anything for a query without OR (a note found has all
its words), never asks.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import (
    Integer,
    Text,
    and_,
    bindparam,
    delete,
    exists,
    func,
    literal,
    select,
    true,
    union_all,
)
from sqlalchemy.dialects.postgresql import ARRAY, insert
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.access import of_user, owned_by
from fable_core.caller import Caller
from fable_core.db.models import Note, NoteVersion, NoteWord

__all__ = ["MIN_SIMILARITY", "WORDS_CONFIG", "count", "count_cte", "recount", "respell", "uncount"]

MIN_SIMILARITY = 0.4
"""How alike (pg_trgm similarity) a word of the vocabulary must be to a query's misspelt word to
replace it: "kitchn"/"kitchen" 0.5, "recipies"/"recipes" 0.55, "budgte"/"budget" 0.4, while
"kitchen"/"kitten" (0.36) stay apart."""

WORDS_CONFIG = "fable_words"
"""The text search configuration that splits a note into its words (migration 0010): the
``simple`` one (lower case, no stemming) without English stop words ("the", "with": never
searched, never a correction, and the words every note has, whose rows concurrent writes would
queue on) and keeping words of letters only (no numbers, e-mail addresses or URLs)."""

# a query's whitespace-separated piece: an optional quote or parenthesis and minus (NOT), the
# word, then closing punctuation
_PIECE = re.compile(r"""(?P<lead>["(]*-?["(]*)(?P<word>[^\W\d_]{3,32})(?P<tail>[").,;:!?]*)""")


def _is_word(lexeme: Any) -> Any:
    """Whether a lexeme of :data:`WORDS_CONFIG` is long enough to be corrected to, short enough
    to be a word (3 to 32 letters; migration 0010 backfills with the same test)."""
    return func.length(lexeme).between(3, 32)


def _words_of(title: Any, body: Any) -> Any:
    """The distinct words of a title and body, as a table of one column ``word``."""
    text_ = func.concat_ws(" ", title, body)
    lexemes = func.unnest(func.tsvector_to_array(func.to_tsvector(WORDS_CONFIG, text_)))
    return lexemes.table_valued("word").render_derived("words")


def _upsert(rows: Any) -> Any:
    """Add ``rows`` (``user_id``, ``word``, ``notes``: a number of notes, negative to uncount)
    to the vocabulary."""
    stmt = insert(NoteWord).from_select(["user_id", "word", "notes"], rows)
    return stmt.on_conflict_do_update(index_elements=[NoteWord.user_id, NoteWord.word],
                                      set_={"notes": NoteWord.notes + stmt.excluded.notes})


def count_cte(new: Any) -> Any:
    """Count the words of the note ``new`` (a CTE with its ``user_id``, ``title`` and ``body``),
    as a CTE for the statement that stores it."""
    words = _words_of(new.c.title, new.c.body)
    rows = (select(new.c.user_id, words.c.word, literal(1)).select_from(new).join(words, true())
            .where(_is_word(words.c.word)).order_by(words.c.word))
    return _upsert(rows).cte("vocabulary")


def _ids() -> Any:
    return bindparam("note_ids", type_=ARRAY(Integer))


def _current(sign: int) -> Any:
    """The words of the notes ``:note_ids`` as they are now, each ``sign`` notes."""
    words = _words_of(Note.title, Note.body)
    return (select(Note.user_id, words.c.word, literal(sign).label("notes")).select_from(Note)
            .join(words, true()).where(Note.id == func.any(_ids())))


def _previous() -> Any:
    """The words of the version before the current one of the notes ``:note_ids``, each -1."""
    words = _words_of(NoteVersion.title, NoteVersion.body)
    before = and_(NoteVersion.note_id == Note.id, NoteVersion.version == Note.version - 1)
    return (select(NoteVersion.user_id, words.c.word, literal(-1).label("notes")).select_from(Note)
            .join(NoteVersion, before).join(words, true()).where(Note.id == func.any(_ids())))


def _change(*parts: Any) -> Any:
    """The upsert of the sum of ``parts`` per word, returning the words it left at zero."""
    every = union_all(*parts).subquery("every") if len(parts) > 1 else parts[0].subquery("every")
    key = (every.c.user_id, every.c.word)
    rows = (select(*key, func.sum(every.c.notes)).where(_is_word(every.c.word))
            .group_by(*key).having(func.sum(every.c.notes) != 0)
            .order_by(every.c.word, every.c.user_id))
    changed = _upsert(rows).returning(NoteWord.user_id, NoteWord.word, NoteWord.notes).cte("changed")
    return select(changed.c.user_id, changed.c.word).where(changed.c.notes <= 0)


_COUNT = _change(_current(1))
_UNCOUNT = _change(_current(-1))
_RECOUNT = _change(_current(1), _previous())


async def count(session: AsyncSession, note_ids: list[int]) -> None:
    """Count the words of these new notes."""
    await _run(session, _COUNT, note_ids)


async def uncount(session: AsyncSession, note_ids: list[int]) -> None:
    """Uncount the words of these notes, about to be deleted."""
    await _run(session, _UNCOUNT, note_ids)


async def recount(session: AsyncSession, note_ids: list[int]) -> None:
    """Count the words these notes' current versions (stored, with their snapshots) gained over
    the versions before, and uncount the ones they lost."""
    await _run(session, _RECOUNT, note_ids)


async def _run(session: AsyncSession, statement: Any, note_ids: list[int]) -> None:
    if not note_ids:
        return
    emptied = (await session.execute(statement, {"note_ids": note_ids})).all()
    if emptied:  # words no note has any more
        users, words = sorted({user_id for user_id, _ in emptied}), sorted({word for _, word in emptied})
        await session.execute(_FORGET, {"users": users, "words": words})


# the rows at zero of these users and words (a pair of them not emptied here has notes: kept)
_FORGET = delete(NoteWord).where(of_user(NoteWord, func.any(bindparam("users", type_=ARRAY(Integer)))),
                                 NoteWord.word == func.any(bindparam("words", type_=ARRAY(Text))), NoteWord.notes <= 0)


async def respell(session: AsyncSession, caller: Caller, query: str) -> str | None:
    """``query`` with each misspelt word replaced by the closest word of the caller's
    vocabulary, or None when no word was replaced. Words after a minus (excluded),
    the operator ``or`` and words search ignores (stop words such as "the") are kept as they are."""
    pieces = [m for m in _PIECE.finditer(query)
              if _standalone(query, m) and "-" not in m.group("lead") and m.group("word").lower() != "or"]
    if not pieces:
        return None
    words = [m.group("word").lower() for m in pieces]
    rows = await session.execute(_corrections(caller, len(words)), {f"w{i}": w for i, w in enumerate(words)})
    found: dict[int, str] = {i: word for i, word in rows if word is not None}
    if not found:
        return None
    out, at = [], 0
    for i, m in enumerate(pieces):
        if i in found:
            out += [query[at:m.start("word")], found[i]]
            at = m.end("word")
    return "".join([*out, query[at:]])


def _standalone(query: str, m: re.Match[str]) -> bool:
    """Whether the match is a whole piece of the query (not part of "v2beta" or "e-mail")."""
    before = query[m.start() - 1] if m.start() else " "
    after = query[m.end()] if m.end() < len(query) else " "
    return before.isspace() and after.isspace()


def _corrections(caller: Caller, count: int) -> Any:
    """(position, word or NULL) for each of ``count`` words (``:w0``, ``:w1``, ...): the word
    of the caller's vocabulary that replaces it, if it is a misspelling: a word search does not
    ignore (no stop word) and that no word of the vocabulary shares its English stem with
    ("recipe" is not corrected to "recipes": searched, both are "recip"; "cooking" finds the
    notes saying "cook", it is not corrected to "cookie").

    Everything is read from the trigram neighbours of the word in the vocabulary (``word %
    :w``, similarity 0.3 and more by pg_trgm's default): words of one stem share most of their
    trigrams (cook/cooking 0.44, run/running 0.33). Asking the notes whether a word finds any
    instead costs a scan of all the caller's notes when the plan is a generic one (250 ms at
    20,000 notes). One SELECT per word, each with its word as a parameter."""
    return union_all(*(_correction(caller, i) for i in range(count)))


def _correction(caller: Caller, i: int) -> Any:
    typed = bindparam(f"w{i}", type_=Text)
    searched = func.plainto_tsquery("english", typed)  # empty for a stop word
    similarity = func.similarity(NoteWord.word, typed)
    near = (select(NoteWord.word, NoteWord.notes, similarity.label("similarity"))
            .where(owned_by(NoteWord, caller), NoteWord.word.op("%")(typed)).cte(f"near_{i}"))
    closest = (select(near.c.word).where(near.c.similarity >= MIN_SIMILARITY)
               .order_by(near.c.similarity.desc(), near.c.notes.desc(), near.c.word).limit(1))
    known = exists().where(func.plainto_tsquery("english", near.c.word) == searched)
    return select(literal(i), closest.scalar_subquery()).where(func.numnode(searched) > 0, ~known)
