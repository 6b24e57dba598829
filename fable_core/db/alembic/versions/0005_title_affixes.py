"""title prefix/suffix indexes for the near-duplicate check

Revision ID: 0005
Revises: 0004

The near-duplicate title check used trigram similarity to find candidates. With many notes whose
titles share trigrams that costs hundreds of milliseconds at 100k notes, whatever the index
(GIN or GiST). Two titles at least 82 % alike share either their first or their last 40 % of
characters when they differ in one place (a typo, a plural, an added word), so the check now
looks at titles sharing that prefix or suffix: two btree range scans.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("notes", sa.Column("title_key_reversed", sa.Text(),
                                     sa.Computed("reverse(title_key)", persisted=True), nullable=False))
    op.drop_index("ix_notes_user_title_key", table_name="notes")
    op.create_index("ix_notes_user_title_key", "notes", ["user_id", "title_key"],
                    postgresql_ops={"title_key": "text_pattern_ops"})
    op.create_index("ix_notes_user_title_key_reversed", "notes", ["user_id", "title_key_reversed"],
                    postgresql_ops={"title_key_reversed": "text_pattern_ops"})


def downgrade() -> None:
    op.drop_index("ix_notes_user_title_key_reversed", table_name="notes")
    op.drop_index("ix_notes_user_title_key", table_name="notes")
    op.create_index("ix_notes_user_title_key", "notes", ["user_id", "title_key"])
    op.drop_column("notes", "title_key_reversed")
