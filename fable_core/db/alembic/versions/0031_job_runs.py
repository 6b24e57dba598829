"""Job runs: the last due time each scheduled job ran for

Revision ID: 0031
Revises: 0030

Several Fable processes on one database run each scheduled job once per due time
(:mod:`fable_core.tools.jobs`): the run that holds the job's advisory lock records the due time it
finished here; the others, finding it, skip that due time.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job_runs",
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("due", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("job_runs")
