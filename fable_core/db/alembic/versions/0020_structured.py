"""structured notes: people, places and lists

Revision ID: 0020
Revises: 0019

A note may be a person, a place or a list (``notes.entity``), its structure in ``notes.fields``
(JSONB: a person's email, phone..., a place's address, coordinates..., a list's items). Versions
keep the fields (``note_versions.fields``, and whether they changed), so restoring one restores
them. ``search_vector`` gains the fields' string values (weight B, as tags): searching an email,
an organisation or an address finds the note. The column is recomputed in one ``ALTER TABLE``
(one rewrite of the table, about a second per 10k notes).
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

_OLD_SEARCH = ("setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A') || "
               "setweight(to_tsvector('english'::regconfig, fable_tag_words(tags)), 'B') || "
               "setweight(to_tsvector('english'::regconfig, coalesce(body, '')), 'C')")
_SEARCH = (_OLD_SEARCH + " || setweight(jsonb_to_tsvector('english'::regconfig, coalesce(fields, '{}'::jsonb), "
           "'[\"string\"]'), 'B')")
_GIN = ("CREATE INDEX ix_notes_search_vector ON notes USING gin (search_vector) "
        "WITH (gin_pending_list_limit = 256)")


def upgrade() -> None:
    op.execute(f"""
        ALTER TABLE notes
            ADD COLUMN entity varchar(16) CONSTRAINT ck_notes_entity CHECK (entity IN ('person', 'place', 'list')),
            ADD COLUMN fields jsonb,
            DROP COLUMN search_vector,
            ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ({_SEARCH}) STORED
    """)
    op.execute(_GIN)
    op.create_index("ix_notes_user_entity_title", "notes", ["user_id", "entity", "title_key"],
                    postgresql_where=sa.text("entity IS NOT NULL"))
    op.add_column("note_versions", sa.Column("fields", postgresql.JSONB()))
    op.add_column("note_versions", sa.Column("fields_changed", sa.Boolean(), server_default=sa.text("false"),
                                             nullable=False))


def downgrade() -> None:
    op.drop_column("note_versions", "fields_changed")
    op.drop_column("note_versions", "fields")
    op.drop_index("ix_notes_user_entity_title", table_name="notes")
    op.execute(f"""
        ALTER TABLE notes
            DROP COLUMN search_vector,
            DROP COLUMN fields,
            DROP COLUMN entity,
            ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ({_OLD_SEARCH}) STORED
    """)
    op.execute(_GIN)
