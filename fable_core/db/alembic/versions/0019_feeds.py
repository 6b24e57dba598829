"""feeds: RSS/Atom subscriptions and their items

Revision ID: 0019
Revises: 0018

``feeds`` holds each user's subscriptions with the conditional-GET validators and the refresh's
health; ``feed_items`` their entries as text, searchable by words (a generated ``tsvector``) and
by meaning (an embedding of any dimension, written in the background).
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects import postgresql

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

ITEM_VECTOR = (
    "setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A') || "
    "setweight(to_tsvector('english'::regconfig, coalesce(content, '')), 'C')"
)


def upgrade() -> None:
    op.create_table(
        "feeds",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("category", sa.String(100), server_default="", nullable=False),
        sa.Column("site_url", sa.Text()),
        sa.Column("etag", sa.Text()),
        sa.Column("last_modified", sa.Text()),
        sa.Column("last_success_at", sa.DateTime(timezone=True)),
        sa.Column("last_attempt_at", sa.DateTime(timezone=True)),
        sa.Column("last_error", sa.Text()),
        sa.Column("failures", sa.Integer(), server_default="0", nullable=False),
        sa.Column("next_fetch_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.UniqueConstraint("user_id", "url", name="uq_feeds_user_url"),
    )
    op.create_index("ix_feeds_user_id", "feeds", ["user_id"])
    op.create_index("ix_feeds_next_fetch_at", "feeds", ["next_fetch_at"])
    op.create_table(
        "feed_items",
        sa.Column("id", sa.BigInteger(), primary_key=True),
        sa.Column("feed_id", sa.Integer(), sa.ForeignKey("feeds.id", ondelete="CASCADE"), nullable=False),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("guid", sa.Text(), nullable=False),
        sa.Column("link", sa.Text()),
        sa.Column("title", sa.String(500), server_default="", nullable=False),
        sa.Column("content", sa.Text(), server_default="", nullable=False),
        sa.Column("author", sa.String(200)),
        sa.Column("published_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("read_at", sa.DateTime(timezone=True)),
        sa.Column("note_id", sa.Integer(), sa.ForeignKey("notes.id", ondelete="SET NULL")),
        sa.Column("embedding_model", sa.String(200)),
        sa.Column("dims", sa.Integer()),
        sa.Column("embedding", Vector()),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("search_vector", postgresql.TSVECTOR(), sa.Computed(ITEM_VECTOR, persisted=True)),
        sa.UniqueConstraint("feed_id", "guid", name="uq_feed_items_feed_guid"),
    )
    op.create_index("ix_feed_items_user_id", "feed_items", ["user_id"])
    op.create_index("ix_feed_items_feed_newest", "feed_items", ["feed_id", "published_at", "id"])
    op.create_index("ix_feed_items_user_newest", "feed_items", ["user_id", "published_at", "id"])
    op.create_index("ix_feed_items_search_vector", "feed_items", ["search_vector"], postgresql_using="gin")


def downgrade() -> None:
    op.drop_table("feed_items")
    op.drop_table("feeds")
