"""``tag_tree``: the caller's tags as the hierarchy their slashes make ('work/acme/q3' is under
'work/acme', under 'work'), each with how many notes carry it or a tag under it.

One statement: each readable note's tags, every prefix of each ('work', 'work/acme', ...) once
per note, counted by prefix, in byte order (``COLLATE "C"``) so that a parent always comes
before its children and a tree cut at :data:`MAX_TAGS` keeps whole branches from the top.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import StringConstraints
from sqlalchemy import Integer, Text, func, literal_column, select
from sqlalchemy.dialects.postgresql import ARRAY

from fable_core.db.models import Note
from fable_core.knowledge.browse.views import TagNode, TagTree
from fable_core.knowledge.filters import escape_like
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import reach_of, readable

__all__ = ["MAX_TAGS", "tag_tree"]

MAX_TAGS = 2000  # the nodes of one tree: more is truncated (and says so)


@tool(group="notes", title="Tag tree", scope="read", route=Route("GET", "/tags/tree"))
async def tag_tree(
    ctx: Context,
    prefix: Annotated[str | None, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)] = None,
) -> TagTree:
    """The caller's tags as a tree ('a/b' under 'a'), each with its count of notes, A-Z.

    Args:
        prefix: Only this tag and those under it.
    """
    scope = readable(Note, await reach_of(ctx.session, ctx.caller))
    wanted = prefix.lower().strip("/#") if prefix else None
    rows = (await ctx.session.execute(_statement(scope, wanted))).all()
    nodes: dict[str, TagNode] = {}
    roots: list[TagNode] = []
    for path, count in rows[:MAX_TAGS]:
        node = nodes[path] = TagNode(tag=path, count=count)
        parent = nodes.get(path.rpartition("/")[0])
        if parent is None:
            roots.append(node)
        else:
            parent.children = [*(parent.children or []), node]
    return TagTree(items=roots, truncated=True if len(rows) > MAX_TAGS else None)


def _statement(scope: Any, prefix: str | None) -> Any:
    tagged = select(Note.id, func.unnest(Note.tags).label("tag")).where(scope).subquery()
    parts = func.string_to_array(tagged.c.tag, "/", type_=ARRAY(Text))
    depth = func.generate_series(1, func.cardinality(parts, type_=Integer)).table_valued("n").render_derived("depth")
    path = func.array_to_string(parts[1:depth.c.n], "/").label("path")
    prefixes = select(tagged.c.id, path).select_from(tagged).join(depth, literal_column("true")).distinct().subquery()
    stmt = select(prefixes.c.path, func.count()).group_by(prefixes.c.path)
    if prefix:
        stmt = stmt.where((prefixes.c.path == prefix) | prefixes.c.path.like(f"{escape_like(prefix)}/%"))
    return stmt.order_by(prefixes.c.path.collate("C")).limit(MAX_TAGS + 1)


