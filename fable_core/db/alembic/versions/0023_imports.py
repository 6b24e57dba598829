"""imported items: where an imported note or conversation came from

Revision ID: 0023
Revises: 0022

``imported_items`` holds one row per imported note or conversation: the import's source
(obsidian, basic_memory, chatgpt, claude) and the item's key there (vault-relative path,
conversation id), so re-running an import creates no duplicates.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "imported_items",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("source_key", sa.Text(), nullable=False),
        sa.Column("item_kind", sa.String(16), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.UniqueConstraint("user_id", "source", "source_key", name="uq_imported_items_key"),
        sa.CheckConstraint("item_kind IN ('note', 'conversation')", name="ck_imported_items_kind"),
    )


def downgrade() -> None:
    op.drop_table("imported_items")
