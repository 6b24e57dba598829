"""Trash tools: list what was deleted, restore it, empty the trash; the job that purges it.

``delete_note`` moves a note here (:mod:`.bin`); it stays restorable, by its owner, for
``FABLE_TRASH_DAYS`` (30 by default), after which the hourly ``purge_trash`` job deletes it for
good, in batches of :data:`BATCH`. The trash is its owner's alone: an editor who deleted a note of
a shared project sees it go to the owner's trash, as the owner would see it vanish from theirs.
Restoring refuses a title a note of the same kind took meanwhile (rename that one first).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, Field
from sqlalchemy import delete, func, select

from fable_core.db.database import Database, delete_in_batches, rowcount
from fable_core.db.models import Note, TrashedNote
from fable_core.errors import NotFound
from fable_core.infra.events import NoteChanged
from fable_core.knowledge import wikilinks
from fable_core.knowledge.image_refs import rebuild_image_refs
from fable_core.knowledge.listing import summary_of
from fable_core.knowledge.matching import check_duplicate_title
from fable_core.knowledge.trash.bin import put_back
from fable_core.knowledge.views import NoteSummary
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import owned_by
from fable_core.tools.jobs import job
from fable_core.tools.paging import Cursor, NewestFirst

if TYPE_CHECKING:
    from fable_core.tools.runtime import Runtime

__all__ = ["BATCH", "purge"]

_PAGES = NewestFirst("trash", TrashedNote.id, TrashedNote.deleted_at)

BATCH = 500


class TrashedItem(BaseModel):
    id: int
    title: str
    kind: Literal["note", "task", "person", "place", "list"]
    deleted_at: datetime
    purge_at: datetime


class TrashPage(BaseModel):
    count: int
    items: list[TrashedItem]
    next_cursor: str | None = None


class Emptied(BaseModel):
    deleted: int


@tool(group="history", title="List deleted notes", scope="read", route=Route("GET", "/trash"))
async def list_trash(ctx: Context, limit: Annotated[int, Field(ge=1, le=200)] = 50,
                     cursor: Cursor = None) -> TrashPage:
    """Notes and tasks you deleted, newest first; restore_note brings one back until purge_at."""
    mine = owned_by(TrashedNote, ctx.caller)
    stmt = select(TrashedNote.id, TrashedNote.title, TrashedNote.kind, TrashedNote.deleted_at).where(mine)
    rows, next_cursor = _PAGES.page((await ctx.session.execute(_PAGES.query(stmt, cursor, limit))).all(), limit)
    count = await ctx.session.scalar(select(func.count()).select_from(TrashedNote).where(mine)) or 0
    keep = timedelta(days=ctx.settings.fable_trash_days)
    items = [TrashedItem(id=i, title=t, kind=k, deleted_at=d, purge_at=d + keep)  # type: ignore[arg-type]
             for i, t, k, d in rows]
    return TrashPage(count=count, items=items, next_cursor=next_cursor)


TrashedId = Annotated[int, Field(ge=1, le=2**31 - 1, description="Its id in list_trash.")]


@tool(group="history", title="Restore a deleted note", scope="write",
      route=Route("POST", "/trash/{trashed_id}/restore"))
async def restore_note(ctx: Context, trashed_id: TrashedId) -> NoteSummary:
    """Bring a deleted note or task back from the trash, with its id, versions and links."""
    note_id = trashed_id
    trashed = await ctx.session.scalar(
        select(TrashedNote).where(owned_by(TrashedNote, ctx.caller), TrashedNote.id == note_id).with_for_update())
    if trashed is None:
        raise NotFound(f"note {note_id} is not in the trash", trashed_id=note_id)
    if trashed.kind != "task":  # a task may repeat a title
        await check_duplicate_title(ctx.session, ctx.caller, trashed.title, fuzzy=False)
    await put_back(ctx.session, trashed)
    note = await ctx.session.get(Note, note_id)
    assert note is not None
    await wikilinks.sync_links(ctx.session, note)
    if "images" not in trashed.data:  # deleted before embeds were recorded: counted as its owner's
        await rebuild_image_refs(ctx.session, [note.id])
    await wikilinks.resolve_pending(ctx.session, note)
    ctx.emit(NoteChanged(note.user_id, note.id, "created"))
    return await summary_of(ctx, note)


@tool(group="history", title="Empty the trash", scope="write", destructive=True, idempotent=True,
      route=Route("DELETE", "/trash"))
async def empty_trash(ctx: Context, trashed_id: TrashedId | None = None) -> Emptied:
    """Delete for good what is in your trash, or only `trashed_id`; it cannot be restored."""
    stmt = delete(TrashedNote).where(owned_by(TrashedNote, ctx.caller))
    if trashed_id is not None:
        stmt = stmt.where(TrashedNote.id == trashed_id)
    deleted = rowcount(await ctx.session.execute(stmt))
    if trashed_id is not None and not deleted:
        raise NotFound(f"note {trashed_id} is not in the trash", trashed_id=trashed_id)
    return Emptied(deleted=deleted)


@job(cron="17 * * * *")
async def purge_trash(fable: Runtime) -> None:
    """Delete the notes that have been in a trash for longer than FABLE_TRASH_DAYS."""
    await purge(fable.db, fable.settings.fable_trash_days)


async def purge(db: Database, days: int, now: datetime | None = None, batch: int = BATCH) -> int:
    """Delete trashed notes deleted more than ``days`` before ``now``; how many."""
    cutoff = (now or datetime.now(UTC)) - timedelta(days=days)
    return await delete_in_batches(db, TrashedNote, TrashedNote.deleted_at < cutoff, batch=batch)
