"""MCP sessions: which replica holds each 2025 MCP session

Revision ID: 0033
Revises: 0031

Behind a load balancer a session's requests reach any replica; the ones that do not hold it
look it up here and forward the request to the one that does (:mod:`fable_mcp.session_routes`).
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0033"
down_revision = "0031"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mcp_sessions",
        sa.Column("id_hash", sa.String(64), primary_key=True),
        sa.Column("replica", sa.Text, nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    )
    op.create_index("ix_mcp_sessions_replica", "mcp_sessions", ["replica"])
    op.create_index("ix_mcp_sessions_key_hash", "mcp_sessions", ["key_hash"])


def downgrade() -> None:
    op.drop_table("mcp_sessions")
