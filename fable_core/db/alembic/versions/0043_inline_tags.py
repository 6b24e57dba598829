"""Inline #tags: the tags a note's text gives it are its tags

Revision ID: 0043
Revises: 0042

A ``#kitchen`` written in a note's body makes ``kitchen`` one of its tags, as in Obsidian;
``inline_tags`` holds the ones its text gives (kept by the model on every change of the body,
:mod:`fable_core.db.hashtags`), so that taking the text away takes the tag away. Notes (and
trashed notes) written before get theirs here, read in batches by id: only the bodies with a
``#`` in their first 64 KB come to Python, and only the notes it gives tags are written.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

from fable_core.db.hashtags import text_tags, with_text_tags

revision = "0043"
down_revision = "0042"
branch_labels = None
depends_on = None

_BATCH = 1000
_NOTES = sa.text(
    "SELECT id, left(body, 65536), tags FROM notes WHERE id > :after AND strpos(left(body, 65536), '#') > 0 "
    "ORDER BY id LIMIT :n")
_SET = sa.text("UPDATE notes SET inline_tags = :inline, tags = :tags WHERE id = :id").bindparams(
    sa.bindparam("inline", type_=ARRAY(sa.Text)), sa.bindparam("tags", type_=ARRAY(sa.Text)))
_TRASHED = sa.text(
    "SELECT id, left(data->'note'->>'body', 65536), data->'note'->'tags' FROM trashed_notes "
    "WHERE strpos(left(data->'note'->>'body', 65536), '#') > 0")
_SET_TRASHED = sa.text(
    "UPDATE trashed_notes SET data = jsonb_set(jsonb_set(data, '{note,inline_tags}', :inline), "
    "'{note,tags}', :tags) WHERE id = :id").bindparams(
    sa.bindparam("inline", type_=JSONB), sa.bindparam("tags", type_=JSONB))


def upgrade() -> None:
    op.execute("ALTER TABLE notes ADD COLUMN IF NOT EXISTS inline_tags text[]")
    bind = op.get_bind()
    after = 0
    while rows := bind.execute(_NOTES, {"after": after, "n": _BATCH}).all():
        after = rows[-1][0]
        found = [{"id": note_id, "inline": inline, "tags": with_text_tags(tags, inline)}
                 for note_id, body, tags in rows if (inline := text_tags(body))]
        if found:
            bind.execute(_SET, found)
    trashed = [{"id": note_id, "inline": inline, "tags": with_text_tags(tags or [], inline)}
               for note_id, body, tags in bind.execute(_TRASHED) if (inline := text_tags(body))]
    if trashed:
        bind.execute(_SET_TRASHED, trashed)


def downgrade() -> None:
    op.execute("ALTER TABLE notes DROP COLUMN IF EXISTS inline_tags")
