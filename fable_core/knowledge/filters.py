"""WHERE clauses the knowledge listings share, so that a tag means the same everywhere."""

from __future__ import annotations

from sqlalchemy import ColumnElement, exists, func, or_, select

from fable_core.db.models import Note

__all__ = ["escape_like", "tag_clause"]


def escape_like(value: str) -> str:
    """``value`` with LIKE's wildcards escaped (PostgreSQL's default escape is a backslash)."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def tag_clause(tag: str) -> ColumnElement[bool]:
    """Notes tagged ``tag`` or a tag under it: 'work' matches 'work' and 'work/acme', not 'workshop'."""
    tags = func.unnest(Note.tags).table_valued("v").render_derived(name="t")
    under = exists(select(1).select_from(tags).where(tags.c.v.like(f"{escape_like(tag)}/%")))
    return or_(Note.tags.contains([tag]), under)
