"""research runs: a question researched on the web into linked notes

Revision ID: 0021
Revises: 0020

``research_runs`` holds one row per run: its question (and the normalised key a rerun is
matched by), its status (``running``, its ``updated_at`` the heartbeat a sweep watches), the
search queries, the sources and the notes it wrote. At most one running run per user.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "research_runs",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("question_key", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), server_default="running", nullable=False),
        sa.Column("error", sa.Text()),
        sa.Column("queries", postgresql.JSONB()),
        sa.Column("sources", postgresql.JSONB()),
        sa.Column("notes", postgresql.JSONB()),
        sa.Column("index_note_id", sa.Integer(), sa.ForeignKey("notes.id", ondelete="SET NULL")),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.CheckConstraint("status IN ('running', 'done', 'error', 'stopped', 'interrupted')",
                           name="ck_research_runs_status"),
    )
    op.create_index("ix_research_runs_user_id", "research_runs", ["user_id"])
    op.create_index("ix_research_runs_user_key", "research_runs", ["user_id", "question_key", "id"])
    op.create_index("uq_research_runs_running", "research_runs", ["user_id"], unique=True,
                    postgresql_where=sa.text("status = 'running'"))


def downgrade() -> None:
    op.drop_table("research_runs")
