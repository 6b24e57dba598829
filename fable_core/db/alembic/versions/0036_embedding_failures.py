"""Embeddings given up after their writes crashed the database backend

Revision ID: 0036
Revises: 0035

``embedding_failures`` counts the crashes of one note's or feed item's embedding write; past the
worker's bound it is left unembedded instead of taking the database down again
(:class:`fable_core.assistant.embeddings.EmbeddingWorker`).
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0036"
down_revision = "0035"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "embedding_failures",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("note_id", sa.Integer(), sa.ForeignKey("notes.id", ondelete="CASCADE"), unique=True),
        sa.Column("feed_item_id", sa.BigInteger(), sa.ForeignKey("feed_items.id", ondelete="CASCADE"), unique=True),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("crashes", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), server_default="", nullable=False),
        sa.Column("last_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.CheckConstraint("(note_id IS NULL) <> (feed_item_id IS NULL)", name="ck_embedding_failures_one"),
    )


def downgrade() -> None:
    op.drop_table("embedding_failures")
