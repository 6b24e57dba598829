"""API keys and OAuth connections remember which tools their MCP client is offered

Revision ID: 0040
Revises: 0039

``toolsets`` is the choice made up front for the credential (``default``, toolsets, tool names,
``all``; :mod:`fable_core.tools.toolsets`); null: the server's default (FABLE_MCP_TOOLSETS).
"""
from __future__ import annotations

from alembic import op

revision = "0040"
down_revision = "0039"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS toolsets text[]")
    op.execute("ALTER TABLE oauth_grants ADD COLUMN IF NOT EXISTS toolsets text[]")


def downgrade() -> None:
    op.execute("ALTER TABLE oauth_grants DROP COLUMN IF EXISTS toolsets")
    op.execute("ALTER TABLE api_keys DROP COLUMN IF EXISTS toolsets")
