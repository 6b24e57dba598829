"""A journal day's prep holds a lease, counts its attempts and waits before the next

Revision ID: 0039
Revises: 0038

The morning prep is a background job (``prepare_due_journals``) that retries a day whose prep
failed or whose process died: ``lease_until`` is how long the claim holds unless its holder
renews it (a claim past it is taken over), ``attempts`` counts the claims made for the day (and
fences a holder that was taken over), ``retry_at`` is when a failed day is tried again (null:
not again). A claim made before this revision gets the five minutes it had.
"""
from __future__ import annotations

from alembic import op

revision = "0039"
down_revision = "0038"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE journal_days ADD COLUMN IF NOT EXISTS lease_until timestamptz, "
               "ADD COLUMN IF NOT EXISTS attempts integer NOT NULL DEFAULT 0, "
               "ADD COLUMN IF NOT EXISTS retry_at timestamptz")
    op.execute("UPDATE journal_days SET lease_until = claimed_at + interval '5 minutes', attempts = 1 "
               "WHERE prep_state = 'preparing' AND lease_until IS NULL")


def downgrade() -> None:
    op.execute("ALTER TABLE journal_days DROP COLUMN IF EXISTS lease_until, DROP COLUMN IF EXISTS attempts, "
               "DROP COLUMN IF EXISTS retry_at")
