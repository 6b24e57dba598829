"""``merge_note_edit``: reconcile an edit made from an older version of a note with what changed
since, for the editor's conflict view (``agents=False``: agents re-read and use edit_note).

The merge (:mod:`fable_core.knowledge.drafts.merge`) is three-way, on the version the edit started from:
nothing is saved here. A clean merge is saved by the editor like any edit, with the note's
current version as ``expected_version``; a merge with conflicts names the sections both sides
changed and carries git-style markers where they did.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field
from sqlalchemy import select

from fable_core.db.models import Note, NoteVersion
from fable_core.errors import NotFound
from fable_core.infra.offload import offload
from fable_core.knowledge.drafts.drafts import DraftTags, DraftTitle, Version
from fable_core.knowledge.drafts.merge import MERGE, merge_bodies, merge_tags, merge_title
from fable_core.knowledge.types import Body, NoteId
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import get_visible

__all__ = ["NoteMerge"]

TITLE_CONFLICT = "(the title)"


class NoteMerge(BaseModel):
    note_id: int
    version: int = Field(description="The note's current version: save the merge with it as expected_version.")
    base_version: int
    clean: bool = Field(description="True when no stretch was changed differently on both sides.")
    title: str = Field(description="Yours when both changed it differently.")
    body: str = Field(description="The merged body; with <<<<<<< theirs / ======= / >>>>>>> yours markers "
                                  "around each conflict.")
    tags: list[str]
    conflicts: Annotated[list[str], Field(description="The headings of the sections both sides changed.")]


@tool(group="notes", title="Merge an edit with the note's changes", scope="read", agents=False, transaction="phases",
      route=Route("POST", "/notes/{note_id}/merge"))
async def merge_note_edit(
    ctx: Context,
    note_id: NoteId,
    base_version: Version,
    body: Body,
    title: DraftTitle | None = None,
    tags: DraftTags | None = None,
) -> NoteMerge:
    """Merge your edit of a note, started from base_version, with the changes saved since.

    Args:
        base_version: The version your edit started from.
        title: Your title (omitted: unchanged).
        tags: Your tags (omitted: unchanged).
    """
    async with ctx.reading() as session:  # released before the merge: it may take a while
        note = await get_visible(session, Note, note_id, ctx.caller)
        base = await session.scalar(
            select(NoteVersion).where(NoteVersion.note_id == note.id, NoteVersion.version == base_version))
    if base is None:
        raise NotFound(f"note {note_id} has no version {base_version}", note_id=note_id, version=base_version)
    merged = await offload(MERGE, len(base.body) + len(note.body) + len(body), merge_bodies, base.body, note.body,
                           body)
    yours = base.title if title is None else title.strip() or base.title
    merged_title = merge_title(base.title, note.title, yours)
    conflicts = merged.conflicts + ([TITLE_CONFLICT] if merged_title is None else [])
    yours_tags = list(base.tags) if tags is None else tags
    return NoteMerge(note_id=note.id, version=note.version, base_version=base_version, clean=not conflicts,
                     title=yours if merged_title is None else merged_title, body=merged.text,
                     tags=merge_tags(list(base.tags), list(note.tags), yours_tags), conflicts=conflicts)
