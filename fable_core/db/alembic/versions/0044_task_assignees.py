"""Task assignees: the person in a shared project who is to do a task

Revision ID: 0044
Revises: 0043

``notes.assignee_id`` is a user who may change the task (its owner, or someone its project or
the task itself is shared with as editor or admin); NULL, nobody in particular. A deleted
account's assignments are cleared with it. Agendas leave out the tasks assigned to others.
"""
from __future__ import annotations

from alembic import op

revision = "0044"
down_revision = "0043"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE notes ADD COLUMN IF NOT EXISTS assignee_id integer "
               "REFERENCES users (id) ON DELETE SET NULL")
    op.execute("CREATE INDEX IF NOT EXISTS ix_notes_assignee_id ON notes (assignee_id) "
               "WHERE assignee_id IS NOT NULL")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_notes_assignee_id")
    op.execute("ALTER TABLE notes DROP COLUMN IF EXISTS assignee_id")
