"""weather forecasts, moments, the profile

Revision ID: 0016
Revises: 0015

``weather_forecasts`` caches each user's forecast per place with the one fetched on an earlier
day (to tell what changed); ``moments`` are what happened to a user, searchable by words
(``search_vector``) and by meaning (``embedding``, exact search over one user's moments: no
index); ``profiles`` and ``profile_observations`` are what Fable knows of a user.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects import postgresql

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_MOMENT_VECTOR = (
    "setweight(to_tsvector('english'::regconfig, coalesce(text, '')), 'A') || "
    "setweight(to_tsvector('english'::regconfig, fable_tag_words(tags) || ' ' || coalesce(mood, '') || ' ' || "
    "coalesce(location, '')), 'B')"
)


def _user(*, primary_key: bool = False) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False,
                     primary_key=primary_key)


def _now(name: str) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False)


def _weather() -> None:
    op.create_table(
        "weather_forecasts",
        sa.Column("id", sa.Integer(), primary_key=True),
        _user(),
        sa.Column("location", sa.String(60), nullable=False),
        sa.Column("lat", sa.Float(), nullable=False),
        sa.Column("lon", sa.Float(), nullable=False),
        sa.Column("fetched_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("forecast", postgresql.JSONB(), nullable=False),
        sa.Column("previous", postgresql.JSONB()),
        sa.Column("previous_fetched_at", sa.DateTime(timezone=True)),
        sa.UniqueConstraint("user_id", "location", name="uq_weather_forecasts_user_location"),
    )


def _moments() -> None:
    op.create_table(
        "moments",
        sa.Column("id", sa.Integer(), primary_key=True),
        _user(),
        sa.Column("tags", postgresql.ARRAY(sa.Text()), server_default=sa.text("'{}'::text[]"), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("mood", sa.String(40)),
        sa.Column("location", sa.String(100)),
        _now("created_at"),
        _now("updated_at"),
        sa.Column("search_vector", postgresql.TSVECTOR(), sa.Computed(_MOMENT_VECTOR, persisted=True)),
        sa.Column("embedding", Vector()),
        sa.Column("embedding_model", sa.String(200)),
    )
    op.create_index("ix_moments_user_at", "moments", ["user_id", "at", "id"])
    op.create_index("ix_moments_search_vector", "moments", ["search_vector"], postgresql_using="gin")
    op.create_index("ix_moments_tags", "moments", ["tags"], postgresql_using="gin")


def _profile() -> None:
    op.create_table(
        "profiles",
        _user(primary_key=True),
        sa.Column("facts", postgresql.ARRAY(sa.Text()), server_default=sa.text("'{}'::text[]"), nullable=False),
        sa.Column("summary", sa.Text(), server_default="", nullable=False),
        sa.Column("summary_at", sa.DateTime(timezone=True)),
        _now("changed_at"),
    )
    op.create_table(
        "profile_observations",
        sa.Column("id", sa.Integer(), primary_key=True),
        _user(),
        sa.Column("text", sa.String(500), nullable=False),
        _now("created_at"),
    )
    op.create_index("ix_profile_observations_user_id_id", "profile_observations", ["user_id", "id"])


def upgrade() -> None:
    _weather()
    _moments()
    _profile()


def downgrade() -> None:
    op.drop_table("profile_observations")
    op.drop_table("profiles")
    op.drop_table("moments")
    op.drop_table("weather_forecasts")
