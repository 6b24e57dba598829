"""edit drafts: a person's unsaved edit of a note, saved while they type

Revision ID: 0027
Revises: 0025

``edit_drafts`` holds one row per person and note (``note_id`` null: a note not created yet),
unique through an index on ``(user_id, coalesce(note_id, 0))``; it goes with its note.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0027"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "edit_drafts",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("note_id", sa.Integer(), sa.ForeignKey("notes.id", ondelete="CASCADE"), nullable=True),
        sa.Column("title", sa.Text(), server_default="", nullable=False),
        sa.Column("body", sa.Text(), server_default="", nullable=False),
        sa.Column("tags", postgresql.ARRAY(sa.Text()), server_default="{}", nullable=False),
        sa.Column("base_version", sa.Integer(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    )
    op.create_index("ix_edit_drafts_user_id", "edit_drafts", ["user_id"])
    op.create_index("uq_edit_drafts_user_note", "edit_drafts", ["user_id", sa.text("coalesce(note_id, 0)")],
                    unique=True)


def downgrade() -> None:
    op.drop_table("edit_drafts")
