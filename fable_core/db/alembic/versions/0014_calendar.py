"""calendar: events and the tombstones of events deleted here that CalDAV sync had stored

Revision ID: 0014
Revises: 0013

``events`` holds each user's events: timed ones in UTC with the zone they were made in, all-day
ones as dates; a recurring event's rule, skipped occurrences (``exdates``) and override rows
(``series_id`` + ``recurrence_id``); ``span_start``/``span_end`` bound each row in UTC for range
queries. ``event_tombstones`` lists what sync must delete on the server.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def _stamp(name: str) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False)


def _user(name: str = "user_id") -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False)


def _events() -> None:
    op.create_table(
        "events",
        sa.Column("id", sa.Integer(), primary_key=True),
        _user(),
        sa.Column("uid", sa.String(255), nullable=False),
        sa.Column("series_id", sa.Integer(), sa.ForeignKey("events.id", ondelete="CASCADE")),
        sa.Column("recurrence_id", sa.DateTime(timezone=False)),
        sa.Column("title", sa.String(300), nullable=False),
        sa.Column("description", sa.Text(), server_default="", nullable=False),
        sa.Column("location", sa.String(500), server_default="", nullable=False),
        sa.Column("color", sa.String(7)),
        sa.Column("all_day", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("start_at", sa.DateTime(timezone=True)),
        sa.Column("end_at", sa.DateTime(timezone=True)),
        sa.Column("start_date", sa.Date()),
        sa.Column("end_date", sa.Date()),
        sa.Column("timezone", sa.String(64)),
        sa.Column("rrule", sa.String(500)),
        sa.Column("exdates", postgresql.ARRAY(sa.DateTime(timezone=False)), server_default="{}", nullable=False),
        sa.Column("span_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("span_end", sa.DateTime(timezone=True)),
        sa.Column("note_id", sa.Integer(), sa.ForeignKey("notes.id", ondelete="SET NULL")),
        sa.Column("project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="SET NULL")),
        sa.Column("caldav_href", sa.Text()),
        sa.Column("caldav_etag", sa.Text()),
        _stamp("created_at"),
        _stamp("updated_at"),
        sa.CheckConstraint(
            "(all_day AND start_date IS NOT NULL AND end_date > start_date AND start_at IS NULL AND end_at IS NULL"
            " AND timezone IS NULL) OR (NOT all_day AND start_at IS NOT NULL AND end_at >= start_at"
            " AND start_date IS NULL AND end_date IS NULL AND timezone IS NOT NULL)",
            name="ck_events_times"),
        sa.CheckConstraint("(series_id IS NULL) = (recurrence_id IS NULL)", name="ck_events_override"),
        sa.CheckConstraint("series_id IS NULL OR rrule IS NULL", name="ck_events_override_rule"),
    )
    op.create_index("ix_events_user_id", "events", ["user_id"])
    op.create_index("uq_events_user_uid", "events", ["user_id", "uid"], unique=True,
                    postgresql_where=sa.text("series_id IS NULL"))
    op.create_index("uq_events_series_recurrence", "events", ["series_id", "recurrence_id"], unique=True,
                    postgresql_where=sa.text("series_id IS NOT NULL"))
    op.create_index("ix_events_user_span", "events", ["user_id", "span_start"])
    op.create_index("ix_events_caldav_href", "events", ["user_id", "caldav_href"],
                    postgresql_where=sa.text("caldav_href IS NOT NULL"))
    op.create_index("ix_events_note_id", "events", ["note_id"], postgresql_where=sa.text("note_id IS NOT NULL"))
    op.create_index("ix_events_project_id", "events", ["project_id"],
                    postgresql_where=sa.text("project_id IS NOT NULL"))


def _tombstones() -> None:
    op.create_table(
        "event_tombstones",
        sa.Column("id", sa.Integer(), primary_key=True),
        _user("owner_id"),
        sa.Column("uid", sa.String(255), nullable=False),
        sa.Column("caldav_href", sa.Text(), nullable=False),
        sa.Column("etag", sa.Text()),
        _stamp("deleted_at"),
    )
    op.create_index("ix_event_tombstones_owner_id", "event_tombstones", ["owner_id"])


def upgrade() -> None:
    _events()
    _tombstones()


def downgrade() -> None:
    op.drop_table("event_tombstones")
    op.drop_table("events")
