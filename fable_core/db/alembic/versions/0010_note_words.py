"""each user's vocabulary: the words of their notes and how many notes have each, for
correcting a search's misspelt words

Revision ID: 0010
Revises: 0009

A search for "kitchn" found nothing, however many notes say "kitchen". ``note_words`` holds the
distinct words of each user's titles and bodies with the number of notes that have each, and a
trigram index on ``word``: when a query finds few notes, each of its words that finds none is
corrected to the most similar word the user's notes have (``fable_core.knowledge.vocabulary``,
which keeps the table as notes are created, changed and deleted).

The words are what the text search configuration ``fable_words`` made here splits a text into:
words of letters only (no numbers, addresses or URLs), lower case, not stemmed, without English
stop words, 3 to 32 letters long. Existing notes' words are counted in one statement, before the
trigram index is built (one index build, not one insert per word).
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
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
        sa.Column("notes", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("user_id", "word"),
        postgresql_with={"fillfactor": 70},  # room for HOT updates: a count changes, not the word
    )
    op.execute("""
        INSERT INTO note_words (user_id, word, notes)
        SELECT n.user_id, w.word, count(*)
        FROM notes n,
             unnest(tsvector_to_array(to_tsvector('fable_words', concat_ws(' ', n.title, n.body)))) AS w(word)
        WHERE length(w.word) BETWEEN 3 AND 32
        GROUP BY n.user_id, w.word
    """)
    op.create_index("ix_note_words_word_trgm", "note_words", ["word"], postgresql_using="gin",
                    postgresql_ops={"word": "gin_trgm_ops"})


def downgrade() -> None:
    op.drop_index("ix_note_words_word_trgm", table_name="note_words")
    op.drop_table("note_words")
    op.execute("DROP TEXT SEARCH CONFIGURATION fable_words")
    op.execute("DROP TEXT SEARCH DICTIONARY fable_word")
