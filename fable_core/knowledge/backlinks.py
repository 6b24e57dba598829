"""``get_backlinks``: the notes whose body links to a note with [[its title]], each with the line
that links, newest first."""

from __future__ import annotations

from sqlalchemy import exists, select

from fable_core.db.models import Note, NoteLink
from fable_core.knowledge import wikilinks
from fable_core.knowledge.plaintext import plain_text
from fable_core.knowledge.types import NoteId
from fable_core.knowledge.views import BacklinkItem, BacklinkPage
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import get_visible, reach_of, readable
from fable_core.tools.paging import Cursor, Limit, NewestFirst

__all__: list[str] = []

BACKLINK_CHARS = 200  # of the linking line a backlink shows, as plain text
_PAGES = NewestFirst("backlinks", Note.id)


@tool(group="notes", title="Find notes that link here", scope="read", route=Route("GET", "/notes/{note_id}/backlinks"))
async def get_backlinks(ctx: Context, note_id: NoteId, limit: Limit = 20, cursor: Cursor = None) -> BacklinkPage:
    """List the notes whose body links to this note with [[its title]], newest first."""
    note = await get_visible(ctx.session, Note, note_id, ctx.caller)
    stmt = select(Note).where(readable(Note, await reach_of(ctx.session, ctx.caller)),
                              exists().where(NoteLink.source_id == Note.id, NoteLink.target_id == note.id))
    sources, next_cursor = _PAGES.page(list(await ctx.session.scalars(_PAGES.query(stmt, cursor, limit))), limit)
    items = [BacklinkItem(id=src.id, title=src.title, kind=src.kind, snippet=_link_line(src.body, note.title_key))
             for src in sources]
    return BacklinkPage(items=items, next_cursor=next_cursor)


def _link_line(body: str, key: str) -> str:
    for line in body.splitlines():
        if any(k == key for k in wikilinks.parse_links(line)):
            return plain_text(line, BACKLINK_CHARS)
    return ""
