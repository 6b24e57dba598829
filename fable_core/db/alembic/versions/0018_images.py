"""images: the images users saved (fetched or uploaded), one row per user and SHA-256

Revision ID: 0018
Revises: 0017

The bytes live on disk under the data dir (``images/<sha[:2]>/<sha>``), shared by every row
with that hash; a row says whose the image is, its sniffed content type, size and source URL.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "images",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("content_type", sa.String(32), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("source_url", sa.Text()),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.UniqueConstraint("user_id", "sha256", name="uq_images_user_sha256"),
    )


def downgrade() -> None:
    op.drop_table("images")
