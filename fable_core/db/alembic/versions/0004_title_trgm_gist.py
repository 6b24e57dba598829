"""title trigram index: GiST instead of GIN

Revision ID: 0004
Revises: 0003
The duplicate-title check and the fuzzy title search look for the titles most similar to a
given one. A GIN trigram index can only filter (`%`), and with common trigrams it visits most
rows (tens of ms at a few thousand notes); a GiST trigram index also serves the nearest-first
order `title_key <-> key`, which stops after the first few rows.
"""
from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_notes_title_key_trgm", table_name="notes")
    op.create_index("ix_notes_title_key_trgm", "notes", ["title_key"], postgresql_using="gist",
                    postgresql_ops={"title_key": "gist_trgm_ops"})


def downgrade() -> None:
    op.drop_index("ix_notes_title_key_trgm", table_name="notes")
    op.create_index("ix_notes_title_key_trgm", "notes", ["title_key"], postgresql_using="gin",
                    postgresql_ops={"title_key": "gin_trgm_ops"})
