"""Generations across replicas: who runs each generation, and its events

Revision ID: 0035
Revises: 0034

Several Fable processes on one database: a chat answer running on one can be followed, resumed
and stopped through another (:mod:`fable_core.infra.shared_generations`). ``generations``
holds one row per key (claimed before the answer starts, beaten while it runs); its events are
written to ``generation_events`` in batches. Both are transient: a finished generation's rows
are deleted a minute after it ends.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0035"
down_revision = "0034"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "generations",
        sa.Column("key", sa.String(100), primary_key=True),
        sa.Column("claim", sa.String(40), nullable=False),
        sa.Column("message_id", sa.BigInteger()),
        sa.Column("owner", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE")),
        sa.Column("heartbeat", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("done", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("stop_requested", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
    )
    op.create_table(
        "generation_events",
        sa.Column("key", sa.String(100), primary_key=True),
        sa.Column("message_id", sa.BigInteger(), primary_key=True),
        sa.Column("seq", sa.Integer(), primary_key=True),
        sa.Column("event", sa.String(40), nullable=False),
        sa.Column("data", JSONB(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("generation_events")
    op.drop_table("generations")
