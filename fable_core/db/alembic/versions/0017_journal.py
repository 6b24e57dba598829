"""journal days: each user's daily journal conversation and its morning prep

Revision ID: 0017
Revises: 0016

``journal_days`` holds one row per user and day (a date in the user's zone): the day's journal
conversation and the state of its morning prep, the row a prep claims so that several Fable
processes prepare a day once.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "journal_days",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("conversation_id", sa.Integer(), sa.ForeignKey("conversations.id", ondelete="CASCADE"),
                  nullable=False, unique=True),
        sa.Column("prep_state", sa.String(10), server_default="none", nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True)),
        sa.Column("prepared_at", sa.DateTime(timezone=True)),
        sa.Column("opener_message_id", sa.BigInteger(), sa.ForeignKey("messages.id", ondelete="SET NULL")),
        sa.Column("opener_source", sa.String(10)),
        sa.Column("sections", postgresql.ARRAY(sa.Text())),
        sa.Column("error", sa.Text()),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.UniqueConstraint("user_id", "day", name="uq_journal_days_user_day"),
        sa.CheckConstraint("prep_state IN ('none', 'preparing', 'done', 'skipped', 'failed')",
                           name="ck_journal_days_prep_state"),
    )
    op.create_index("ix_journal_days_user_id", "journal_days", ["user_id"])


def downgrade() -> None:
    op.drop_table("journal_days")
