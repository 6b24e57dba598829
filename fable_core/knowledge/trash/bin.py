"""Moving a deleted note into its owner's trash and back, with its id.

A deleted note leaves ``notes`` (so search, links, sharing, listings and counts never have to
exclude it) and waits as one ``trashed_notes`` row: its columns, its versions and its work log,
as PostgreSQL's own JSON of those rows (``to_jsonb``). Restoring reads them back with
``jsonb_populate_record(set)`` into the same tables, with the same ids: links written to it and
its version numbers work again, and wikilinks waiting for its title resolve to it again. A
project, milestone or parent note deleted meanwhile is left out (NULL). What a restore does not
bring back: its shares, its server-side draft and its embedding (recomputed by the embedding
backfill) were deleted with it. Its image embeds come back with who wrote each (``images``), for
the images still there.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table, delete, text
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import Note, NoteImage, NoteVersion, TaskLog, TrashedNote

__all__ = ["put_back", "throw_away"]


def _stored(table: Table) -> list[str]:
    """The columns of ``table`` a row is written with (not the generated ones)."""
    return [c.name for c in table.columns if c.computed is None]


def _generated(table: Table) -> str:
    names = ", ".join(f"'{c.name}'" for c in table.columns if c.computed is not None)
    return f"ARRAY[{names}]::text[]" if names else "ARRAY[]::text[]"


def _aggregate(table: Table, alias: str, order: str) -> str:
    return (f"coalesce((SELECT jsonb_agg(to_jsonb({alias}) - {_generated(table)} ORDER BY {alias}.{order}) "
            f"FROM {table.name} {alias} WHERE {alias}.note_id = n.id), '[]'::jsonb)")


_NOTES: Table = Note.__table__  # type: ignore[assignment]
_VERSIONS: Table = NoteVersion.__table__  # type: ignore[assignment]
_LOGS: Table = TaskLog.__table__  # type: ignore[assignment]
_IMAGES: Table = NoteImage.__table__  # type: ignore[assignment]

_MOVE = text(f"""
INSERT INTO trashed_notes (id, user_id, title, kind, deleted_by, data)
SELECT n.id, n.user_id, n.title,
       coalesce(n.entity, CASE WHEN n.status IS NULL THEN 'note' ELSE 'task' END), :deleted_by,
       jsonb_build_object('note', to_jsonb(n) - {_generated(_NOTES)},
                          'versions', {_aggregate(_VERSIONS, 'v', 'version')},
                          'logs', {_aggregate(_LOGS, 'l', 'id')},
                          'images', {_aggregate(_IMAGES, 'i', 'image_id')})
FROM notes n WHERE n.id = :note_id
""")

# a reference to a row deleted since is left out, as its ON DELETE SET NULL would have done
_STILL_THERE = {"project_id": "projects", "milestone_id": "milestones", "parent_id": "notes"}


def _note_value(column: str) -> str:
    if column in _STILL_THERE:
        return f"(SELECT x.id FROM {_STILL_THERE[column]} x WHERE x.id = r.{column})"
    return f"r.{column}"


_RESTORE_NOTE = text(f"""
INSERT INTO notes ({", ".join(_stored(_NOTES))})
SELECT {", ".join(_note_value(c) for c in _stored(_NOTES))}
FROM trashed_notes t, jsonb_populate_record(NULL::notes, t.data->'note') r WHERE t.id = :note_id
""")


def _restore_children(table: Table, key: str) -> Any:
    columns = ", ".join(_stored(table))
    return text(f"""
INSERT INTO {table.name} ({columns})
SELECT {", ".join(f"r.{c}" for c in _stored(table))}
FROM trashed_notes t, jsonb_populate_recordset(NULL::{table.name}, t.data->'{key}') r WHERE t.id = :note_id
""")


_RESTORE_IMAGES = text("""
INSERT INTO note_images (note_id, image_id, added_by)
SELECT r.note_id, r.image_id, r.added_by
FROM trashed_notes t, jsonb_populate_recordset(NULL::note_images, t.data->'images') r
WHERE t.id = :note_id AND EXISTS (SELECT 1 FROM images i WHERE i.id = r.image_id)
  AND EXISTS (SELECT 1 FROM users u WHERE u.id = r.added_by)
""")
_RESTORE_CHILDREN = (_restore_children(_VERSIONS, "versions"), _restore_children(_LOGS, "logs"), _RESTORE_IMAGES)


async def throw_away(session: AsyncSession, note: Note, deleted_by: int) -> None:
    """Move ``note`` (with its versions and work log) into its owner's trash."""
    await session.execute(_MOVE, {"note_id": note.id, "deleted_by": deleted_by})
    await session.execute(delete(Note).where(Note.id == note.id))


async def put_back(session: AsyncSession, trashed: TrashedNote) -> None:
    """Restore a trashed note as it was, with its id, versions and work log; the trash row goes."""
    params = {"note_id": trashed.id}
    await session.execute(_RESTORE_NOTE, params)
    for statement in _RESTORE_CHILDREN:
        await session.execute(statement, params)
    await session.execute(delete(TrashedNote).where(TrashedNote.id == trashed.id))
