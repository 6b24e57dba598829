"""Which images a note embeds, and who wrote each embed into it (``note_images``).

Readers of a note see an image it embeds only when the image's owner wrote that embed
(:func:`fable_core.tools.access.image_readable`); an embed keeps the writer who first added it, so an
owner's later save of a note does not adopt the ids an editor planted in it. Every save of a
body calls :func:`sync_image_refs` (or :func:`add_image_refs` for notes created in bulk).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from sqlalchemy import delete, text
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.db.models import NoteImage

__all__ = ["MAX_REFS", "add_image_refs", "copy_image_refs", "image_ids", "rebuild_image_refs", "sync_image_refs"]

MAX_REFS = 1000  # embeds recorded per note: more than any note shows
_IMAGE = re.compile(r"(?<![\w.:/-])/api/images/(\d{1,9})(?!\d)")
_ADD = text(
    "INSERT INTO note_images (note_id, image_id, added_by) "
    "SELECT :note_id, i.id, :writer FROM images i WHERE i.id = ANY(:ids) ON CONFLICT DO NOTHING")


def image_ids(body: str) -> list[int]:
    """The image ids ``body`` embeds, in order, each once (at most :data:`MAX_REFS`)."""
    return list(dict.fromkeys(int(m.group(1)) for m in _IMAGE.finditer(body)))[:MAX_REFS]


async def sync_image_refs(session: AsyncSession, note_id: int, body: str, writer: int) -> None:
    """Make the note's recorded embeds match ``body``; new ones are ``writer``'s."""
    ids = image_ids(body)
    await session.execute(delete(NoteImage).where(NoteImage.note_id == note_id, NoteImage.image_id.not_in(ids)))
    if ids:
        await session.execute(_ADD, {"note_id": note_id, "writer": writer, "ids": ids})


async def add_image_refs(session: AsyncSession, notes: Iterable[tuple[int, str]], writer: int) -> None:
    """The embeds of new notes (``(note_id, body)``), all ``writer``'s."""
    rows = [{"note_id": note_id, "writer": writer, "ids": ids} for note_id, body in notes if (ids := image_ids(body))]
    if rows:
        await session.execute(_ADD, rows)


async def copy_image_refs(session: AsyncSession, source: int, target: int) -> None:
    """``target`` (a copy of ``source``'s body: a recurring task's next occurrence) embeds what
    ``source`` does, each by the same writer."""
    await session.execute(text(
        "INSERT INTO note_images (note_id, image_id, added_by) SELECT :target, image_id, added_by "
        "FROM note_images WHERE note_id = :source ON CONFLICT DO NOTHING"), {"source": source, "target": target})


async def rebuild_image_refs(session: AsyncSession, note_ids: list[int]) -> None:
    """The embeds of notes a restore wrote, each counted as its owner's (an archive is its owner's
    data, as migration 0037 counted the embeds that were there)."""
    if note_ids:
        await session.execute(text(
            "INSERT INTO note_images (note_id, image_id, added_by) "
            "SELECT DISTINCT n.id, i.id, n.user_id FROM notes n "
            "CROSS JOIN LATERAL regexp_matches(n.body, '/api/images/([0-9]{1,9})(?![0-9])', 'g') AS m "
            "JOIN images i ON i.id = m[1]::int WHERE n.id = ANY(:ids) ON CONFLICT DO NOTHING"), {"ids": note_ids})
