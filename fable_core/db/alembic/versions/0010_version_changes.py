"""what changed in each note version, counted when it is stored

Revision ID: 0010
Revises: 0009

``list_note_versions`` says what each version changed ("title changed; body +3/-1 lines; tags
+work"). Diffing the bodies of fifty versions on every listing would read fifty bodies; the
counts are stored with each version instead (``fable_core.knowledge.saving.snapshot``), with
its body length, so a listing reads no body at all. Existing versions are counted here, each
against the version before it: lines as multisets (``EXCEPT ALL``), tags as sets.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_TEXTS = sa.text("'{}'::text[]")


def upgrade() -> None:
    op.add_column("note_versions", sa.Column("body_length", sa.Integer(), server_default="0", nullable=False))
    op.add_column("note_versions", sa.Column("title_changed", sa.Boolean(), server_default=sa.text("false"),
                                             nullable=False))
    op.add_column("note_versions", sa.Column("lines_added", sa.Integer(), server_default="0", nullable=False))
    op.add_column("note_versions", sa.Column("lines_removed", sa.Integer(), server_default="0", nullable=False))
    op.add_column("note_versions", sa.Column("tags_added", postgresql.ARRAY(sa.Text()), server_default=_TEXTS,
                                             nullable=False))
    op.add_column("note_versions", sa.Column("tags_removed", postgresql.ARRAY(sa.Text()), server_default=_TEXTS,
                                             nullable=False))
    op.execute("""
        UPDATE note_versions v SET
            body_length = length(v.body),
            title_changed = p.id IS NOT NULL AND p.title <> v.title,
            lines_added = CASE WHEN p.id IS NULL OR p.body = v.body THEN 0 ELSE (
                SELECT count(*) FROM (SELECT unnest(string_to_array(v.body, E'\\n'))
                                      EXCEPT ALL SELECT unnest(string_to_array(p.body, E'\\n'))) AS added) END,
            lines_removed = CASE WHEN p.id IS NULL OR p.body = v.body THEN 0 ELSE (
                SELECT count(*) FROM (SELECT unnest(string_to_array(p.body, E'\\n'))
                                      EXCEPT ALL SELECT unnest(string_to_array(v.body, E'\\n'))) AS removed) END,
            tags_added = CASE WHEN p.id IS NULL THEN '{}' ELSE
                ARRAY(SELECT t FROM unnest(v.tags) AS t WHERE NOT t = ANY(p.tags)) END,
            tags_removed = CASE WHEN p.id IS NULL THEN '{}' ELSE
                ARRAY(SELECT t FROM unnest(p.tags) AS t WHERE NOT t = ANY(v.tags)) END
        FROM note_versions v2 LEFT JOIN note_versions p ON p.note_id = v2.note_id AND p.version = v2.version - 1
        WHERE v2.id = v.id
    """)


def downgrade() -> None:
    for column in ("tags_removed", "tags_added", "lines_removed", "lines_added", "title_changed", "body_length"):
        op.drop_column("note_versions", column)
