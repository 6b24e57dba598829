"""the error of a failed answer, kept with it

Revision ID: 0009
Revises: 0008

An answer that failed (``status`` ``error``) or was cut off (``interrupted``) kept only its
partial text, often none, so after a reload the chat showed an empty bubble. ``messages.error``
keeps what went wrong, in words, for the UI to show in its place.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("messages", sa.Column("error", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("messages", "error")
