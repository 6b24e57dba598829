"""search by title apart from bodies, tags' words searchable, the note's vectors stored in its row

Revision ID: 0012
Revises: 0011

Keyword search at 100k notes took 250-400 ms for a word in half of them: it ranked every
matching note, and half the notes kept their search vector out of line (TOAST), so ranking one
meant two more index and heap visits. Search now ranks a bounded set of candidates
(``fable_core.knowledge.ranking``): the notes whose title has the query's words, found
through their own index on ``title_vector``, and the most recently updated notes that match.

- ``title_vector``: the words of the title, with a GIN index;
- ``search_vector`` now has the tags' words too (``project/alpha`` gives ``project`` and
  ``alpha``), so searching "python" finds the notes tagged ``topic/python``. Weights: title A,
  tags B, body C (the ranking weighs them 1.0, 0.6 and 0.4: the body as before);
- ``toast_tuple_target`` 8160: a row of a few kB (nearly every note) stays whole in its page,
  vectors included, rather than moving its largest value to the TOAST table at 2 kB.

The columns are added in one ``ALTER TABLE``, which rewrites the table once (about a second
per 10k notes) under the new target.
"""
from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_TAG_WORDS = """
CREATE FUNCTION fable_tag_words(tags text[]) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT translate(array_to_string(tags, ' '), '/', ' ') $$
"""
_SEARCH = ("setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A') || "
           "setweight(to_tsvector('english'::regconfig, fable_tag_words(tags)), 'B') || "
           "setweight(to_tsvector('english'::regconfig, coalesce(body, '')), 'C')")
_TITLE = "to_tsvector('english'::regconfig, coalesce(title, ''))"
_OLD_SEARCH = ("setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A') || "
               "setweight(to_tsvector('english'::regconfig, coalesce(body, '')), 'B')")


def _gin(name: str, column: str) -> str:
    return f"CREATE INDEX {name} ON notes USING gin ({column}) WITH (gin_pending_list_limit = 256)"


def upgrade() -> None:
    op.execute(_TAG_WORDS)
    op.execute("ALTER TABLE notes SET (toast_tuple_target = 8160)")
    op.execute(f"""
        ALTER TABLE notes
            DROP COLUMN search_vector,
            ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ({_SEARCH}) STORED,
            ADD COLUMN title_vector tsvector GENERATED ALWAYS AS ({_TITLE}) STORED
    """)
    op.execute(_gin("ix_notes_search_vector", "search_vector"))
    op.execute(_gin("ix_notes_title_vector", "title_vector"))


def downgrade() -> None:
    op.execute(f"""
        ALTER TABLE notes
            DROP COLUMN title_vector,
            DROP COLUMN search_vector,
            ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ({_OLD_SEARCH}) STORED
    """)
    op.execute(_gin("ix_notes_search_vector", "search_vector"))
    op.execute("ALTER TABLE notes RESET (toast_tuple_target)")
    op.execute("DROP FUNCTION fable_tag_words(text[])")
