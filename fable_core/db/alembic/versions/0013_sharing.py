"""sharing, groups, notifications and Web Push, account activity

Revision ID: 0013
Revises: 0012

Projects and notes are shared with a user or a group (``shares``: exactly one item, exactly one
grantee, a permission), groups hold members with a role. A shared project's notes are listed
newest first per project (``ix_notes_project_updated``, which replaces the index on
``project_id`` alone). ``notifications`` is each user's inbox; ``push_subscriptions`` the
devices Web Push reaches. ``users.last_login_at`` is when an account last signed in.

Each area has its own function below, so that the parts of this revision read apart.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def _created() -> sa.Column:  # type: ignore[type-arg]
    return sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False)


def _user(name: str = "user_id", *, ondelete: str = "CASCADE", nullable: bool = False) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.Integer(), sa.ForeignKey("users.id", ondelete=ondelete), nullable=nullable)


def _sharing() -> None:
    op.create_table(
        "groups",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("description", sa.Text(), server_default="", nullable=False),
        _user("created_by", ondelete="SET NULL", nullable=True),
        _created(),
    )
    op.create_index("uq_groups_name", "groups", [sa.text("lower(name)")], unique=True)
    op.create_table(
        "group_members",
        sa.Column("group_id", sa.Integer(), sa.ForeignKey("groups.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("role", sa.String(8), server_default="member", nullable=False),
        _created(),
        sa.CheckConstraint("role IN ('member', 'owner')", name="ck_group_members_role"),
    )
    op.create_index("ix_group_members_user_id", "group_members", ["user_id"])
    op.create_table(
        "shares",
        sa.Column("id", sa.Integer(), primary_key=True),
        _user("owner_id"),
        sa.Column("project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="CASCADE")),
        sa.Column("note_id", sa.Integer(), sa.ForeignKey("notes.id", ondelete="CASCADE")),
        _user("grantee_user_id", nullable=True),
        sa.Column("grantee_group_id", sa.Integer(), sa.ForeignKey("groups.id", ondelete="CASCADE")),
        sa.Column("permission", sa.String(8), nullable=False),
        _user("shared_by", ondelete="SET NULL", nullable=True),
        _created(),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.CheckConstraint("num_nonnulls(project_id, note_id) = 1", name="ck_shares_one_item"),
        sa.CheckConstraint("num_nonnulls(grantee_user_id, grantee_group_id) = 1", name="ck_shares_one_grantee"),
        sa.CheckConstraint("permission IN ('viewer', 'editor', 'admin')", name="ck_shares_permission"),
    )
    for column in ("owner_id", "project_id", "note_id", "grantee_user_id", "grantee_group_id"):
        op.create_index(f"ix_shares_{column}", "shares", [column])
    for item in ("project", "note"):
        for grantee in ("user", "group"):
            op.create_index(f"uq_shares_{item}_{grantee}", "shares", [f"{item}_id", f"grantee_{grantee}_id"],
                            unique=True, postgresql_where=sa.text(
                                f"{item}_id IS NOT NULL AND grantee_{grantee}_id IS NOT NULL"))
    op.create_index("ix_notes_project_updated", "notes", ["project_id", "updated_at", "id"])
    op.drop_index("ix_notes_project_id", table_name="notes")


def _notifications() -> None:
    op.create_table(
        "notifications",
        sa.Column("id", sa.BigInteger(), primary_key=True),
        _user(),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("title", sa.String(300), nullable=False),
        sa.Column("body", sa.Text(), server_default="", nullable=False),
        sa.Column("data", postgresql.JSONB()),
        sa.Column("key", sa.String(200)),
        _created(),
        sa.Column("read_at", sa.DateTime(timezone=True)),
        sa.Column("push_state", sa.String(8), server_default="pending", nullable=False),
        sa.Column("push_claimed_at", sa.DateTime(timezone=True)),
    )
    op.create_index("ix_notifications_user_id", "notifications", ["user_id"])
    op.create_index("ix_notifications_user_id_id", "notifications", ["user_id", "id"])
    op.create_index("ix_notifications_unread", "notifications", ["user_id"],
                    postgresql_where=sa.text("read_at IS NULL"))
    op.create_index("ix_notifications_push_pending", "notifications", ["id"],
                    postgresql_where=sa.text("push_state = 'pending'"))
    op.create_index("ix_notifications_push_sending", "notifications", ["push_claimed_at"],
                    postgresql_where=sa.text("push_state = 'sending'"))
    op.create_index("uq_notifications_user_key", "notifications", ["user_id", "key"], unique=True,
                    postgresql_where=sa.text("key IS NOT NULL"))
    op.create_table(
        "push_subscriptions",
        sa.Column("id", sa.Integer(), primary_key=True),
        _user(),
        sa.Column("endpoint", sa.Text(), nullable=False, unique=True),
        sa.Column("p256dh", sa.String(200), nullable=False),
        sa.Column("auth", sa.String(100), nullable=False),
        sa.Column("user_agent", sa.String(200), server_default="", nullable=False),
        _created(),
        sa.Column("last_sent_at", sa.DateTime(timezone=True)),
        sa.Column("failures", sa.Integer(), server_default="0", nullable=False),
    )
    op.create_index("ix_push_subscriptions_user_id", "push_subscriptions", ["user_id"])


def _accounts() -> None:
    op.add_column("users", sa.Column("last_login_at", sa.DateTime(timezone=True)))


def upgrade() -> None:
    _sharing()
    _notifications()
    _accounts()


def downgrade() -> None:
    op.drop_column("users", "last_login_at")
    op.drop_table("push_subscriptions")
    op.drop_table("notifications")
    op.create_index("ix_notes_project_id", "notes", ["project_id"])
    op.drop_index("ix_notes_project_updated", table_name="notes")
    op.drop_table("shares")
    op.drop_table("group_members")
    op.drop_table("groups")
