"""server-side login sessions, verified emails

Revision ID: 0008
Revises: 0007

Browser sessions were signed cookies with nothing kept server-side: signing out only asked the
browser to forget its cookie, and a copy went on working. Each session is now a row (the
cookie carries a random token, the row its SHA-256), deleted when the session ends. The
per-user ``session_version`` that ended every session at once is replaced by deleting rows.

Emails are stored lower-cased and carry ``email_verified_at``: an address becomes one an
account may receive password resets at only once its owner proved it, and a proven address
belongs to one account.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "login_sessions",
        sa.Column("id", sa.BigInteger(), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("csrf", sa.String(64), nullable=False),
        sa.Column("user_agent", sa.String(200), server_default="", nullable=False),
        sa.Column("ip", sa.String(64), server_default="", nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_login_sessions_user_id", "login_sessions", ["user_id"])
    op.drop_column("users", "session_version")
    op.add_column("users", sa.Column("email_verified_at", sa.DateTime(timezone=True)))
    op.execute("UPDATE users SET email = lower(email) WHERE email <> lower(email)")
    op.create_index("uq_users_verified_email", "users", ["email"], unique=True,
                    postgresql_where=sa.text("email_verified_at IS NOT NULL"))


def downgrade() -> None:
    op.drop_index("uq_users_verified_email", table_name="users")
    op.drop_column("users", "email_verified_at")
    op.add_column("users", sa.Column("session_version", sa.Integer(), server_default="1", nullable=False))
    op.drop_index("ix_login_sessions_user_id", table_name="login_sessions")
    op.drop_table("login_sessions")
