"""app logs: newest-first across categories

Revision ID: 0025
Revises: 0023

``list_logs`` without a category pages every category newest first by ``(created_at, id)``;
without this index each page sorted the whole table.
"""
from __future__ import annotations

from alembic import op

revision = "0025"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_app_logs_created", "app_logs", ["created_at", "id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_app_logs_created", table_name="app_logs")
