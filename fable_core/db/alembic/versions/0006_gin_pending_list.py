"""a small GIN pending list for the full-text and tag indexes

Revision ID: 0006
Revises: 0005

GIN indexes queue new entries in a "pending list" (fastupdate) that every search scans linearly
until autovacuum merges it; the default limit is 4 MB. After a bulk import (``import_notes``)
the list was full and a search took ten times as long until the next vacuum. 256 kB keeps the
cheap batched inserts and bounds what a search has to scan.
"""
from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_INDEXES = ("ix_notes_search_vector", "ix_notes_tags")


def upgrade() -> None:
    for name in _INDEXES:
        op.execute(f"ALTER INDEX {name} SET (gin_pending_list_limit = 256)")


def downgrade() -> None:
    for name in _INDEXES:
        op.execute(f"ALTER INDEX {name} RESET (gin_pending_list_limit)")
