"""caldav accounts and event versions

Revision ID: 0015
Revises: 0014

``caldav_accounts`` holds each user's CalDAV server (one per user: URL, login with the password
sealed, the chosen calendar, the last sync token, the sync's health and its lease);
``event_versions`` keeps the losing side of a both-sides edit found while syncing;
``event_sync_marks`` says when each event was last the same here and on the server.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def _at(name: str) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.DateTime(timezone=True))


def upgrade() -> None:
    op.create_table(
        "caldav_accounts",
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("username", sa.String(200), nullable=False),
        sa.Column("password_sealed", sa.Text(), nullable=False),
        sa.Column("calendar_href", sa.Text()),
        sa.Column("calendar_name", sa.String(300)),
        sa.Column("sync_token", sa.Text()),
        _at("last_success_at"),
        _at("last_attempt_at"),
        sa.Column("last_error", sa.Text()),
        sa.Column("failures", sa.Integer(), server_default="0", nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        _at("claimed_until"),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    )
    op.create_index("ix_caldav_accounts_due", "caldav_accounts", ["next_attempt_at"],
                    postgresql_where=sa.text("calendar_href IS NOT NULL"))
    op.create_table(
        "event_versions",
        sa.Column("id", sa.BigInteger(), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("uid", sa.String(255), nullable=False),
        sa.Column("side", sa.String(8), nullable=False),
        sa.Column("reason", sa.String(16), nullable=False),
        sa.Column("title", sa.Text(), server_default="", nullable=False),
        sa.Column("ical", sa.Text(), nullable=False),
        _at("modified_at"),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.CheckConstraint("side IN ('local', 'server')", name="ck_event_versions_side"),
    )
    op.create_index("ix_event_versions_user_uid", "event_versions", ["user_id", "uid", "id"])
    op.create_table(
        "event_sync_marks",
        sa.Column("event_id", sa.Integer(), sa.ForeignKey("events.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("synced_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("event_sync_marks")
    op.drop_table("event_versions")
    op.drop_table("caldav_accounts")
