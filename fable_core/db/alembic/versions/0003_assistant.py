"""assistant: conversations, messages, note embeddings, note drafts

Revision ID: 0003
Revises: 0002
The embedding column is a dimensionless ``vector``: each embedding model decides its size.
HNSW needs a fixed dimension, so the index is a partial expression index per dimension
(``(embedding::vector(768)) vector_cosine_ops WHERE dims = 768``); this migration creates the
one for 768 (nomic-embed-text, the default) and ``fable_core.assistant.embeddings`` creates one
for any other dimension the first time a model of that size is used.
"""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects import postgresql

from fable_core.db.migrations import vectors_run

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _timestamps() -> list[sa.Column[Any]]:
    return [
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
    ]


def _owner() -> sa.Column[int]:
    return sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False)


def upgrade() -> None:
    op.create_table(
        "conversations",
        sa.Column("id", sa.Integer(), primary_key=True),
        _owner(),
        sa.Column("title", sa.String(200), server_default="New conversation", nullable=False),
        sa.Column("model", sa.String(200), nullable=True),
        sa.Column("conversation_type", sa.String(16), server_default="chat", nullable=False),
        sa.Column("day_date", sa.Date(), nullable=True),
        sa.Column("rag_project_id", sa.Integer(), nullable=True),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("summary_message_id", sa.BigInteger(), nullable=True),
        *_timestamps(),
    )
    op.create_index("ix_conversations_user_id", "conversations", ["user_id"])
    op.create_index("ix_conversations_user_updated", "conversations", ["user_id", "updated_at", "id"])
    op.create_table(
        "messages",
        sa.Column("id", sa.BigInteger(), primary_key=True),
        sa.Column("conversation_id", sa.Integer(),
                  sa.ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False),
        _owner(),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("content", sa.Text(), server_default="", nullable=False),
        sa.Column("status", sa.String(16), server_default="done", nullable=False),
        sa.Column("tool_events", postgresql.JSONB(), nullable=True),
        sa.Column("context", postgresql.JSONB(), nullable=True),
        *_timestamps(),
    )
    op.create_index("ix_messages_user_id", "messages", ["user_id"])
    op.create_index("ix_messages_conversation_id", "messages", ["conversation_id", "id"])
    op.create_index("ix_messages_generating", "messages", ["status"],
                    postgresql_where=sa.text("status = 'generating'"))
    op.create_table(
        "note_embeddings",
        sa.Column("note_id", sa.Integer(), sa.ForeignKey("notes.id", ondelete="CASCADE"), primary_key=True),
        _owner(),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("dims", sa.Integer(), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("embedding", Vector(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
    )
    op.create_index("ix_note_embeddings_user_id", "note_embeddings", ["user_id"])
    if vectors_run():  # no index method where pgvector cannot run (fable_core.db.vectors)
        op.execute(
            "CREATE INDEX IF NOT EXISTS ix_note_embeddings_hnsw_768 ON note_embeddings "
            "USING hnsw ((embedding::vector(768)) vector_cosine_ops) WHERE dims = 768"
        )
    op.create_table(
        "note_drafts",
        sa.Column("id", sa.Integer(), primary_key=True),
        _owner(),
        sa.Column("note_id", sa.Integer(), sa.ForeignKey("notes.id", ondelete="CASCADE"), nullable=False),
        sa.Column("instruction", sa.Text(), nullable=False),
        sa.Column("section", sa.String(300), nullable=True),
        sa.Column("content", sa.Text(), server_default="", nullable=False),
        sa.Column("status", sa.String(16), server_default="generating", nullable=False),
        sa.Column("base_version", sa.Integer(), nullable=False),
        *_timestamps(),
        sa.UniqueConstraint("user_id", "note_id", name="uq_note_drafts_user_note"),
    )
    op.create_index("ix_note_drafts_user_id", "note_drafts", ["user_id"])


def downgrade() -> None:
    op.drop_table("note_drafts")
    op.execute("DROP INDEX IF EXISTS ix_note_embeddings_hnsw_768")
    op.drop_table("note_embeddings")
    op.drop_table("messages")
    op.drop_table("conversations")
