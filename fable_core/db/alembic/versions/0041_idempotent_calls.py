"""Idempotency keys: a write call's result kept under the key its caller sent

Revision ID: 0041
Revises: 0040

A call sent again with the same key answers the kept result and writes nothing
(:mod:`fable_core.tools.idempotency`); rows older than 48 hours are pruned hourly.
"""
from __future__ import annotations

from alembic import op

revision = "0041"
down_revision = "0040"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
        CREATE TABLE IF NOT EXISTS idempotent_calls (
            user_id integer NOT NULL REFERENCES users (id) ON DELETE CASCADE,
            key varchar(200) NOT NULL,
            tool varchar(100) NOT NULL,
            fingerprint varchar(64) NOT NULL,
            result jsonb,  -- null while a call that runs in phases runs
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (user_id, key)
        )""")
    op.execute("CREATE INDEX IF NOT EXISTS ix_idempotent_calls_created_at ON idempotent_calls (created_at)")


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS idempotent_calls")
