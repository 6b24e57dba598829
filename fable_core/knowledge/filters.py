"""WHERE clauses the knowledge listings share, so that a tag means the same everywhere."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Text, bindparam, exists, func, or_, select
from sqlalchemy.dialects.postgresql import ARRAY

from fable_core.db.models import Note

__all__ = ["escape_like", "tag_clause", "tag_params"]


def escape_like(value: str) -> str:
    """``value`` with LIKE's wildcards escaped (PostgreSQL's default escape is a backslash)."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def tag_params(tag: str) -> dict[str, Any]:
    """The bind parameters of :func:`tag_clause` for ``tag``."""
    return {"tag_exact": [tag], "tag_under": f"{escape_like(tag)}/%"}


def tag_clause(tag: str) -> ColumnElement[bool]:
    """Notes tagged ``tag`` or a tag under it: 'work' matches 'work' and 'work/acme', not 'workshop'.

    The values are named bind parameters (``tag_params``), so a statement built once can be
    run again for another tag."""
    values = tag_params(tag)
    tags = func.unnest(Note.tags).table_valued("v").render_derived(name="t")
    under = exists(select(1).select_from(tags).where(
        tags.c.v.like(bindparam("tag_under", values["tag_under"], type_=Text))))
    return or_(Note.tags.contains(bindparam("tag_exact", values["tag_exact"], type_=ARRAY(Text))), under)
