"""``note_graph``: notes, their tags and projects, and the links between them, for the graph view.

At most ``limit`` notes (5,000 at most: :data:`MAX_NOTES`), the most recently changed first,
with what they point at: the notes they link to with ``[[...]]`` (among those shown), each tag
they carry (and each tag's parent tag, so a hierarchy hangs together), their project. Three
statements: the notes, their links (the shown notes' ids bound as one array), their projects'
titles; the result validated in one call. Compact: a node is an id, a label and a kind; a link
a pair of ids.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field
from sqlalchemy import Integer, any_, bindparam, case, func, select
from sqlalchemy.dialects.postgresql import ARRAY

from fable_core.db.models import Note, NoteLink, Project
from fable_core.knowledge.browse.views import Graph
from fable_core.knowledge.filters import check_refs, note_filters
from fable_core.knowledge.types import Tag
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import reach_of, readable
from fable_core.tools.results import RowId

__all__ = ["MAX_NOTES", "note_graph"]

MAX_NOTES = 5000

_KIND = func.coalesce(Note.entity, case((Note.status.is_(None), "note"), else_="task"))


@tool(group="notes", title="Graph of notes", scope="read", route=Route("GET", "/graph"))
async def note_graph(
    ctx: Context,
    tag: Tag | None = None,
    project_id: RowId | None = None,
    limit: Annotated[int, Field(ge=1, le=MAX_NOTES)] = 2000,
) -> Graph:
    """Notes, their tags and projects as nodes, with the links between them.

    Most recently changed notes first.

    Args:
        tag: Only notes with this tag or one under it.
    """
    scoped = await check_refs(ctx, project_id=project_id)
    reach = await reach_of(ctx.session, ctx.caller)
    where = note_filters(tag=tag, kind="all", status=None, priority=None, project_id=scoped,
                         milestone_id=None, parent_id=None, due_before=None, due_after=None)
    notes = (await ctx.session.execute(
        select(Note.id, Note.title, _KIND.label("kind"), Note.tags, Note.project_id)
        .where(readable(Note, reach), *where).order_by(Note.updated_at.desc(), Note.id.desc()).limit(limit + 1)
    )).all()
    truncated = len(notes) > limit
    notes = notes[:limit]
    nodes: list[dict[str, Any]] = [{"id": f"n{n.id}", "label": n.title, "kind": n.kind} for n in notes]
    links: list[list[str]] = []
    ids = bindparam("ids", [n.id for n in notes], type_=ARRAY(Integer))  # one array, not 5,000 parameters
    found = await ctx.session.execute(
        select(NoteLink.source_id, NoteLink.target_id).distinct()
        .where(NoteLink.source_id == any_(ids), NoteLink.target_id == any_(ids),
               NoteLink.source_id != NoteLink.target_id))
    links += [[f"n{s}", f"n{t}"] for s, t in found]
    tags: set[str] = set()
    for n in notes:
        for t in n.tags:
            links.append([f"n{n.id}", f"t:{t}"])
            tags.add(t)
    for tag in sorted(tags):  # each tag's ancestors too, each linked to its parent
        child = tag
        while "/" in child:
            parent = child.rpartition("/")[0]
            links.append([f"t:{child}", f"t:{parent}"])
            if parent in tags:
                break
            tags.add(parent)
            child = parent
    nodes += [{"id": f"t:{t}", "label": f"#{t}", "kind": "tag"} for t in sorted(tags)]
    project_ids = {n.project_id for n in notes if n.project_id is not None}
    if project_ids:
        projects = await ctx.session.execute(
            select(Project.id, Project.title).where(readable(Project, reach), Project.id.in_(project_ids)))
        shown: dict[int, str] = {pid: title for pid, title in projects.all()}  # noqa: C416 - rows, not pairs
        nodes += [{"id": f"p{pid}", "label": title, "kind": "project"} for pid, title in sorted(shown.items())]
        links += [[f"n{n.id}", f"p{n.project_id}"] for n in notes if n.project_id in shown]
    # one validation call for the whole graph: pydantic loops over the nodes in Rust
    return Graph.model_validate({"nodes": nodes, "links": links, "truncated": True if truncated else None})
