"""Note aliases: the other names a note's front matter gives it, for links

Revision ID: 0042
Revises: 0041

A vault's front matter stays at the top of an imported note's body; ``alias_keys`` holds the
title keys of its ``aliases`` (kept by the model on every change of the body), so a
``[[link]]`` to an alias finds the note. Notes written before keep their bodies: the few that
open with front matter get their keys here.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from fable_core.db.models import alias_keys

revision = "0042"
down_revision = "0041"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE notes ADD COLUMN IF NOT EXISTS alias_keys text[]")
    op.execute("CREATE INDEX IF NOT EXISTS ix_notes_alias_keys ON notes USING gin (alias_keys) "
               "WHERE alias_keys IS NOT NULL")
    bind = op.get_bind()
    rows = bind.execute(sa.text("SELECT id, body FROM notes WHERE body LIKE '---%'")).all()
    found = [{"id": note_id, "keys": keys} for note_id, body in rows if (keys := alias_keys(body))]
    if found:
        bind.execute(sa.text("UPDATE notes SET alias_keys = :keys WHERE id = :id"), found)
        bind.execute(sa.text(  # the links waiting for those names
            "UPDATE note_links l SET target_id = (SELECT min(n.id) FROM notes n WHERE n.user_id = l.user_id "
            "AND n.alias_keys @> ARRAY[l.target_key]) WHERE l.target_id IS NULL AND l.target_key = ANY(:keys)"),
            {"keys": sorted({k for row in found for k in row["keys"]})})


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_notes_alias_keys")
    op.execute("ALTER TABLE notes DROP COLUMN IF EXISTS alias_keys")
