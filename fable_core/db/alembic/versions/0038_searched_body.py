"""A note's search vector holds the first 150,000 characters of its body

Revision ID: 0038
Revises: 0037

A tsvector holds at most 1 MB: a body of 1 MB of distinct words could not be stored at all (the
generated column failed, and the save with it). The vector now reads the start of the body; the
body itself is stored whole. Rewrites ``notes`` once (the column is generated and stored).
"""
from __future__ import annotations

from alembic import op

revision = "0038"
down_revision = "0037"
branch_labels = None
depends_on = None

_BEFORE = ("setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A') || "
           "setweight(to_tsvector('english'::regconfig, fable_tag_words(tags)), 'B') || "
           "setweight(to_tsvector('english'::regconfig, coalesce(body, '')), 'C') || "
           "setweight(jsonb_to_tsvector('english'::regconfig, coalesce(fields, '{}'::jsonb), '[\"string\"]'), 'B')")
_AFTER = _BEFORE.replace("coalesce(body, '')", "left(coalesce(body, ''), 150000)")
_GIN = ("CREATE INDEX ix_notes_search_vector ON notes USING gin (search_vector) "
        "WITH (gin_pending_list_limit = 256)")


def _vector(expression: str) -> None:
    op.execute(f"ALTER TABLE notes DROP COLUMN search_vector, "
               f"ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ({expression}) STORED")
    op.execute(_GIN)


def upgrade() -> None:
    _vector(_AFTER)


def downgrade() -> None:
    _vector(_BEFORE)
