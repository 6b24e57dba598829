"""a partial index of the links still waiting for their title

Revision ID: 0007
Revises: 0006

Every new (or renamed) note resolves the links that were waiting for its title. With
``(user_id, target_key)`` alone, and statistics not yet refreshed after a bulk import, the planner
chose to scan all of a user's links: five seconds for one ``import_notes`` batch at 100,000
notes. The unresolved links are few, and this index holds only them.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_note_links_unresolved", "note_links", ["user_id", "target_key"],
                    postgresql_where=sa.text("target_id IS NULL"))


def downgrade() -> None:
    op.drop_index("ix_note_links_unresolved", table_name="note_links")
