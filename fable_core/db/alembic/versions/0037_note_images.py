"""Which images a note embeds, and who wrote each embed in

Revision ID: 0037
Revises: 0036

An image was readable by anyone who could read a note of its owner's that named it, so an
editor of the note could append ``/api/images/1`` ... and read the owner's private images.
``note_images`` records who wrote each embed; an image is readable through a note only when its
owner did (:func:`fable_core.tools.access.image_readable`). Existing embeds count as written by the
note's owner: what was readable before stays readable, and nothing more.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0037"
down_revision = "0036"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "note_images",
        sa.Column("note_id", sa.Integer(), sa.ForeignKey("notes.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("image_id", sa.Integer(), sa.ForeignKey("images.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("added_by", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    )
    op.create_index("ix_note_images_image_id", "note_images", ["image_id"])
    op.execute(
        "INSERT INTO note_images (note_id, image_id, added_by) "
        "SELECT DISTINCT n.id, i.id, n.user_id FROM notes n "
        "CROSS JOIN LATERAL regexp_matches(n.body, '/api/images/([0-9]{1,9})(?![0-9])', 'g') AS m "
        "JOIN images i ON i.id = m[1]::int "
        "ON CONFLICT DO NOTHING"
    )


def downgrade() -> None:
    op.drop_table("note_images")
