"""``export_data``: everything a user owns, as a Markdown ZIP or one JSON document, streamed.

Only the caller's own rows are exported; notes shared with them are their owners' data and stay
out. The archive is produced while it is sent: notes (and every section's rows) are read in
keyset pages of :data:`PAGE` rows and written out before the next is read, so memory stays flat
whatever the size. Every page is read from one snapshot (``REPEATABLE READ READ ONLY``: writes
made during the download are in none of it, so the export never holds a version of a note it
lacks), on a connection of its own outside the pool
(:meth:`~fable_core.db.database.Database.detached_snapshot`): a slow download holds none of the
connections everyone else's calls need. The export is audited
(``app_logs``, category ``audit``, action ``export``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, Literal

from sqlalchemy import Select, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.admin.audit import Actor, audit
from fable_core.data.export.markdown import UniqueNames, ZipStream, front_matter, safe_name
from fable_core.data.export.sections import SECTIONS, Section
from fable_core.db.frontmatter import parse_markdown, without_keys
from fable_core.db.models import Milestone, Note, Project
from fable_core.errors import Conflict
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import owned_by, owned_rows
from fable_core.tools.binary import Download

__all__ = ["FORMAT_VERSION", "PAGE", "Export", "export_data"]

PAGE = 1000
FORMAT_VERSION = 1
_CHUNK = 256 * 1024  # bytes gathered before a chunk is handed to the surface


class Export(Download):
    """A Markdown ZIP or a JSON document."""

    media_types = ("application/zip", "application/json")


def _file_text(meta: dict[str, Any], body: str) -> str:
    """A note's file: Fable's front matter, with the properties the note's own front matter holds
    (an imported vault's ``aliases``, ``cssclasses``...) in the same block, then the body."""
    own = parse_markdown(body) if body.startswith("---") else None
    extra: list[str] = []
    if own is not None and not own.problem and own.lines:
        taken = {key for key, value in meta.items() if value not in (None, [], {})}
        extra, body = without_keys(own.lines, taken), own.body
    body = body if body.endswith("\n") or not body else body + "\n"
    return front_matter(meta, extra) + "\n" + body


@tool(group="data", title="Export my data", scope="read", route=Route("GET", "/export"), transaction="phases",
      agents=False)
async def export_data(ctx: Context, format: Literal["markdown", "json"] = "markdown") -> Export:  # noqa: A002
    """Download everything you own: a Markdown ZIP (a file per note) or one JSON document.

    Args:
        format: markdown (a ZIP, a folder per project) or json (every kind of row).
    """
    username = ctx.caller.username or f"user-{ctx.user_id}"
    if _reading[ctx.user_id]:  # one person's downloads must not take every reader there is
        raise Conflict("an export of yours is being downloaded: let it finish (or stop it), then export again")
    ctx.fable.db.check_detached()  # refused now with a status, not cut once the download began
    async with ctx.transaction() as session:
        actor = Actor(ctx.user_id, username, "cli" if ctx.caller.surface == "cli" else "web")
        await audit(session, actor, "export", format=format)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    name = f"fable-{safe_name(username)}-{stamp}"
    if format == "json":
        return Export(content_type="application/json", filename=f"{name}.json", chunks=_json_chunks(ctx))
    return Export(content_type="application/zip", filename=f"{name}.zip", chunks=_markdown_chunks(ctx))


_reading: Counter[int] = Counter()  # user → their exports being read in this process


@asynccontextmanager
async def _snapshot(ctx: Context) -> AsyncIterator[AsyncSession]:
    """The export's one snapshot (:meth:`~fable_core.db.database.Database.detached_snapshot`),
    counted as its user's while it is read."""
    _reading[ctx.user_id] += 1
    try:
        async with ctx.fable.db.detached_snapshot() as session:
            yield session
    finally:
        _reading[ctx.user_id] -= 1
        if not _reading[ctx.user_id]:
            del _reading[ctx.user_id]


async def _pages(ctx: Context, session: AsyncSession, section: Section) -> AsyncIterator[list[dict[str, Any]]]:
    """The section's rows of the caller, a page at a time, in primary-key order."""
    table = section.table
    key = list(table.primary_key.columns)
    columns = section.columns
    last: tuple[Any, ...] | None = None
    while True:
        statement: Select[Any] = (select(*columns, *[c for c in key if c not in columns])
                                  .where(owned_rows(table, section.owner, ctx.caller)).order_by(*key).limit(PAGE))
        if last is not None:
            statement = statement.where(tuple_(*key) > tuple_(*last))
        rows = (await session.execute(statement)).mappings().all()
        if not rows:
            return
        last = tuple(rows[-1][c.name] for c in key)
        yield [{c.name: row[c.name] for c in columns} for row in rows]
        if len(rows) < PAGE:
            return


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes):
        return None
    return str(value)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_plain)


async def _json_chunks(ctx: Context) -> AsyncIterator[bytes]:
    """``{"format": ..., "version": 1, "exported_at": ..., "user": ..., "<section>": [rows]...,
    "rows": {"<section>": count...}, "complete": true}``: the last two keys are written only once
    every row is, so a document cut short (a failure mid-download) lacks them."""
    head = {"format": "fable-export", "version": FORMAT_VERSION, "exported_at": datetime.now(UTC),
            "user": {"id": ctx.user_id, "username": ctx.caller.username}}
    buffer = [_dumps(head)[:-1]]
    size = 0
    counts: dict[str, int] = {}
    async with _snapshot(ctx) as session:  # every section as of one moment
        for section in SECTIONS:
            buffer.append(f',"{section.name}":[')
            first = True
            counts[section.name] = 0
            async for page in _pages(ctx, session, section):
                for row in page:
                    text = _dumps(row)
                    buffer.append(text if first else "," + text)
                    size += len(text)
                    first = False
                counts[section.name] += len(page)
                if size >= _CHUNK:
                    yield "".join(buffer).encode("utf-8")
                    buffer.clear()
                    size = 0
            buffer.append("]")
    buffer.append(f',"rows":{_dumps(counts)},"complete":true}}\n')
    yield "".join(buffer).encode("utf-8")


async def _markdown_chunks(ctx: Context) -> AsyncIterator[bytes]:
    """A ZIP of ``<project>/<title>.md`` (no project: the top folder), written as notes are read."""
    async with _snapshot(ctx) as session:  # projects and notes as of one moment
        async for chunk in _markdown(ctx, session):
            yield chunk


async def _markdown(ctx: Context, session: AsyncSession) -> AsyncIterator[bytes]:
    projects = (await session.execute(select(Project.id, Project.title).where(owned_by(Project, ctx.caller))
                                      .order_by(Project.id))).all()
    milestones: dict[int, str] = {row.id: row.title for row in await session.execute(
        select(Milestone.id, Milestone.title).where(owned_by(Milestone, ctx.caller)))}
    names = UniqueNames()
    folders = {pid: names.take("", safe_name(title, "Project")) for pid, title in projects}
    titles = dict(projects)
    archive = ZipStream()
    after = 0
    while notes := list((await session.execute(
            select(Note.id, Note.title, Note.body, Note.tags, Note.project_id, Note.milestone_id, Note.status,
                   Note.priority, Note.due_date, Note.recurrence_rule, Note.completed_at, Note.entity,
                   Note.fields, Note.parent_id, Note.created_at, Note.updated_at, Note.inline_tags)
            .where(owned_by(Note, ctx.caller), Note.id > after).order_by(Note.id).limit(PAGE))).all()):
        after = notes[-1].id
        for n in notes:
            folder = folders.get(n.project_id, "") if n.project_id is not None else ""
            file = names.take(folder, safe_name(n.title), ".md")
            kind = n.entity or ("task" if n.status is not None else "note")
            given = [t for t in n.tags if t not in (n.inline_tags or ())]  # the text gives the rest back
            meta = {"title": n.title, "id": n.id, "kind": kind, "tags": given,
                    "created": n.created_at, "updated": n.updated_at,
                    "project": titles.get(n.project_id) if n.project_id is not None else None,
                    "milestone": milestones.get(n.milestone_id) if n.milestone_id is not None else None,
                    "status": n.status, "priority": n.priority, "due": n.due_date,
                    "recurrence": n.recurrence_rule, "completed": n.completed_at, "fields": n.fields,
                    "parent_id": n.parent_id}
            archive.add(f"{folder}/{file}" if folder else file, _file_text(meta, n.body), n.updated_at)
        chunk = archive.drain()
        if chunk:
            yield chunk
        if len(notes) < PAGE:
            break
    yield archive.close()
