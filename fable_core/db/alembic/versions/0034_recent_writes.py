"""Recent writes: when each user last wrote, for read-your-writes with a read replica

Revision ID: 0034
Revises: 0033

With ``DATABASE_READ_URL`` set, a write tool's transaction records its caller here; that
caller's reads stay on the primary for ``FABLE_READ_YOUR_WRITES_SECONDS``, whichever Fable
process serves them (:mod:`fable_core.db.replica`). UNLOGGED: only the primary reads it.
"""
from __future__ import annotations

from alembic import op

revision = "0034"
down_revision = "0033"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE UNLOGGED TABLE recent_writes ("
               "writer_id integer PRIMARY KEY, written_at timestamptz NOT NULL)")


def downgrade() -> None:
    op.drop_table("recent_writes")
