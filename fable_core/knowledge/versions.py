"""Version history of notes: a snapshot after every save, listing, diffs and restore."""

from __future__ import annotations

import difflib
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field
from sqlalchemy import select

from fable_core.db.models import Note, NoteVersion
from fable_core.errors import NotFound
from fable_core.knowledge.listing import summary_of
from fable_core.knowledge.saving import save_changes
from fable_core.knowledge.types import NoteId
from fable_core.knowledge.views import NoteSummary
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import get_visible
from fable_core.tools.paging import Cursor, Limit, decode_cursor, encode_cursor

VersionNo = Annotated[int, Field(ge=1, le=2**31 - 1, description="1 is the first save.")]


class VersionSummary(BaseModel):
    id: int
    version: int
    title: str
    body_length: int
    created_at: datetime
    current: bool
    changes: str = Field(description="What changed from the version before, e.g. "
                                     "'title changed; body +3/-1 lines; tags +work'.")


class VersionPage(BaseModel):
    note_id: int
    items: list[VersionSummary]
    next_cursor: str | None = None


class VersionDiff(BaseModel):
    note_id: int
    from_version: int
    to_version: int
    title_changed: bool
    diff: str = Field(description="Unified diff of the bodies.")
    added_lines: int
    removed_lines: int


async def _version(ctx: Context, note_id: int, version: int) -> NoteVersion:
    row = await ctx.session.scalar(
        select(NoteVersion).where(NoteVersion.note_id == note_id, NoteVersion.version == version)
    )
    if row is None:
        raise NotFound(f"note {note_id} has no version {version}", note_id=note_id, version=version)
    return row


# what a listing reads of each version: never its body
_LISTED = (NoteVersion.id, NoteVersion.version, NoteVersion.title, NoteVersion.body_length, NoteVersion.created_at,
           NoteVersion.title_changed, NoteVersion.lines_added, NoteVersion.lines_removed, NoteVersion.tags_added,
           NoteVersion.tags_removed, NoteVersion.fields_changed)


def _changes(v: Any) -> str:
    """One line saying what version ``v`` changed, from the counts stored with it."""
    if v.version == 1:
        return "created"
    said = ["title changed"] if v.title_changed else []
    if v.lines_added or v.lines_removed:
        said.append(f"body +{v.lines_added}/-{v.lines_removed} lines")
    tags = [f"+{t}" for t in v.tags_added] + [f"-{t}" for t in v.tags_removed]
    if tags:
        said.append("tags " + " ".join(tags))
    if v.fields_changed:
        said.append("fields changed")
    return "; ".join(said) or "title, body and tags unchanged"


@tool(group="history", title="List versions of a note", scope="read", route=Route("GET", "/notes/{note_id}/versions"))
async def list_note_versions(ctx: Context, note_id: NoteId, limit: Limit = 20,
                             cursor: Cursor = None) -> VersionPage:
    """A note's saved versions without bodies, newest first, each with a line on what it changed."""
    note = await get_visible(ctx.session, Note, note_id, ctx.caller)
    position = decode_cursor(cursor, "versions")
    stmt = select(*_LISTED).where(NoteVersion.note_id == note.id)
    if position is not None:
        stmt = stmt.where(NoteVersion.version < int(position[0]))
    rows = (await ctx.session.execute(stmt.order_by(NoteVersion.version.desc()).limit(limit + 1))).all()
    items = [VersionSummary(id=r.id, version=r.version, title=r.title, body_length=r.body_length,
                            created_at=r.created_at, current=r.version == note.version, changes=_changes(r))
             for r in rows[:limit]]
    more = len(rows) > limit
    return VersionPage(note_id=note.id, items=items,
                       next_cursor=encode_cursor("versions", [items[-1].version]) if more else None)


@tool(group="history", title="Compare two versions of a note", scope="read",
      route=Route("GET", "/notes/{note_id}/diff"))
async def diff_note_versions(ctx: Context, note_id: NoteId, from_version: VersionNo,
                             to_version: VersionNo | None = None) -> VersionDiff:
    """What changed between two versions of a note, as a unified diff.

    Args:
        to_version: Default: the current version.
    """
    note = await get_visible(ctx.session, Note, note_id, ctx.caller)
    old = await _version(ctx, note.id, from_version)
    new = await _version(ctx, note.id, to_version or note.version)
    lines = list(difflib.unified_diff(
        old.body.splitlines(), new.body.splitlines(),
        f"version {old.version}", f"version {new.version}", lineterm="",
    ))
    return VersionDiff(
        note_id=note.id, from_version=old.version, to_version=new.version,
        title_changed=old.title != new.title, diff="\n".join(lines),
        added_lines=sum(1 for x in lines if x.startswith("+") and not x.startswith("+++")),
        removed_lines=sum(1 for x in lines if x.startswith("-") and not x.startswith("---")),
    )


@tool(group="history", title="Restore a version of a note", scope="write",
      route=Route("POST", "/notes/{note_id}/versions/{version}/restore"))
async def restore_note_version(ctx: Context, note_id: NoteId, version: VersionNo) -> NoteSummary:
    """Bring back an earlier version's title, body, tags and fields, saved as a new version."""
    note = await get_visible(ctx.session, Note, note_id, ctx.caller, for_update=True, need="editor")
    old = await _version(ctx, note.id, version)
    old_title = note.title
    note.title, note.body, note.tags = old.title, old.body, list(old.tags)
    if note.entity is not None:
        note.fields = old.fields
    await save_changes(ctx, note, old_title=old_title)
    return await summary_of(ctx, note)
