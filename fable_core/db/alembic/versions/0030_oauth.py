"""OAuth authorization server: clients, grants, codes, tokens

Revision ID: 0030
Revises: 0028

Fable as its own OAuth 2.1 authorization server for MCP clients (:mod:`fable_core.identity.oauth`):
registered clients, each person's approval of a client (a connection), single-use
authorization codes and the access and refresh tokens, all secrets stored as SHA-256.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0030"
down_revision = "0028"
branch_labels = None
depends_on = None


def _when(name: str, nullable: bool = True) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _created() -> sa.Column:  # type: ignore[type-arg]
    return sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False)


def _grant() -> sa.Column:  # type: ignore[type-arg]
    return sa.Column("grant_id", sa.Integer(), sa.ForeignKey("oauth_grants.id", ondelete="CASCADE"), nullable=False)


def upgrade() -> None:
    op.create_table(
        "oauth_clients",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("client_id", sa.String(2000), nullable=False, unique=True),
        sa.Column("client_name", sa.String(200), nullable=False),
        sa.Column("redirect_uris", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("client_uri", sa.Text()),
        sa.Column("software", sa.String(200)),
        sa.Column("registered_ip", sa.String(64)),
        _created(),
        _when("disabled_at"),
    )
    op.create_table(
        "oauth_grants",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("client_ref", sa.Integer(), sa.ForeignKey("oauth_clients.id", ondelete="CASCADE"), nullable=False),
        sa.Column("scope", sa.String(8), nullable=False),
        _created(),
        _when("last_used_at"),
        sa.UniqueConstraint("user_id", "client_ref", name="uq_oauth_grants_user_client"),
        sa.CheckConstraint("scope IN ('read', 'write')", name="ck_oauth_grants_scope"),
    )
    op.create_index("ix_oauth_grants_user_id", "oauth_grants", ["user_id"])
    op.create_index("ix_oauth_grants_client_ref", "oauth_grants", ["client_ref"])
    op.create_table(
        "oauth_codes",
        sa.Column("id", sa.Integer(), primary_key=True),
        _grant(),
        sa.Column("code_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("family", sa.String(32), nullable=False),
        sa.Column("redirect_uri", sa.Text(), nullable=False),
        sa.Column("code_challenge", sa.String(128), nullable=False),
        sa.Column("scope", sa.String(8), nullable=False),
        sa.Column("resource", sa.Text(), nullable=False),
        _when("expires_at", nullable=False),
        _when("used_at"),
    )
    op.create_index("ix_oauth_codes_grant_id", "oauth_codes", ["grant_id"])
    op.create_table(
        "oauth_tokens",
        sa.Column("id", sa.Integer(), primary_key=True),
        _grant(),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("family", sa.String(32), nullable=False),
        sa.Column("scope", sa.String(8), nullable=False),
        sa.Column("resource", sa.Text(), nullable=False),
        _created(),
        _when("expires_at", nullable=False),
        _when("used_at"),
        _when("revoked_at"),
        sa.CheckConstraint("kind IN ('access', 'refresh')", name="ck_oauth_tokens_kind"),
    )
    op.create_index("ix_oauth_tokens_grant_id", "oauth_tokens", ["grant_id"])
    op.create_index("ix_oauth_tokens_family", "oauth_tokens", ["family"])


def downgrade() -> None:
    for table in ("oauth_tokens", "oauth_codes", "oauth_grants", "oauth_clients"):
        op.drop_table(table)
