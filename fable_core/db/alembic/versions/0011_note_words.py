"""each user's vocabulary: the words their notes have had, for correcting a search's
misspelt words

Revision ID: 0011
Revises: 0010

A search for "kitchn" found nothing, however many notes say "kitchen". ``note_words`` holds the
distinct words of each user's titles and bodies (a set: no counts, so writes never wait on each
other's rows), and a trigram index on ``word``: when a query finds few notes, each of its words
that finds none is corrected to one of the most similar words the user's notes have had
(``fable_core.knowledge.vocabulary``, which adds the words of every note written and keeps
those of deleted ones).

The words are what the text search configuration ``fable_words`` made here splits a text into:
words of letters only (no numbers, addresses or URLs), lower case, not stemmed, without English
stop words, 3 to 32 letters long. Existing notes' words are inserted in one statement, before
the trigram index is built (one index build, not one insert per word).
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE TEXT SEARCH DICTIONARY fable_word (TEMPLATE = simple, STOPWORDS = english)")
    op.execute("CREATE TEXT SEARCH CONFIGURATION fable_words (PARSER = default)")
    op.execute("ALTER TEXT SEARCH CONFIGURATION fable_words "
               "ADD MAPPING FOR asciiword, word, hword_asciipart, hword_part WITH fable_word")
    op.create_table(
        "note_words",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("word", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("user_id", "word"),
    )
    op.execute("""
        INSERT INTO note_words (user_id, word)
        SELECT DISTINCT n.user_id, w.word
        FROM notes n,
             unnest(tsvector_to_array(to_tsvector('fable_words', concat_ws(' ', n.title, n.body)))) AS w(word)
        WHERE length(w.word) BETWEEN 3 AND 32
    """)
    op.create_index("ix_note_words_word_trgm", "note_words", ["word"], postgresql_using="gin",
                    postgresql_ops={"word": "gin_trgm_ops"})


def downgrade() -> None:
    op.drop_index("ix_note_words_word_trgm", table_name="note_words")
    op.drop_table("note_words")
    op.execute("DROP TEXT SEARCH CONFIGURATION fable_words")
    op.execute("DROP TEXT SEARCH DICTIONARY fable_word")
