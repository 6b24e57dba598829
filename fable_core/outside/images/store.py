"""The image store: bytes on disk named by their SHA-256, a row per user and image.

``<data dir>/images/<sha[:2]>/<sha>`` holds each distinct image once, whoever saved it; a file
is written to a temporary name in the same directory and renamed into place, so a reader never
sees half an image and two writers of the same bytes both succeed. A row (:class:`Image`) says
whose it is; saving bytes a user already has returns their existing row.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import anyio
from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.config import Settings
from fable_core.db.models import Image
from fable_core.errors import NotFound, PayloadTooLarge
from fable_core.outside.images.sniff import sniff
from fable_core.tools.access import image_readable, owned_by, reach_of
from fable_core.tools.caller import Caller

__all__ = ["INLINE_READ", "Checked", "Stored", "check", "discard_unused", "image_path", "load", "place", "read_bytes",
           "save", "stored_at", "write_file"]


@dataclass(frozen=True, slots=True)
class Checked:
    """Bytes that passed: an image of an accepted type, within the size limit."""

    content: bytes
    content_type: str
    sha256: str


def check(content: bytes, limit: int) -> Checked:
    """``content`` as an image to keep, or PayloadTooLarge / NotAnImage (nothing stored)."""
    if len(content) > limit:
        raise PayloadTooLarge(f"the image is larger than the {limit}-byte limit", limit=limit)
    return Checked(content, sniff(content), hashlib.sha256(content).hexdigest())


def stored_at(data_dir: Path, sha256: str) -> Path:
    """Where the file of these bytes lives under a data dir."""
    return data_dir / "images" / sha256[:2] / sha256


def image_path(settings: Settings, sha256: str) -> Path:
    return stored_at(settings.fable_data_dir, sha256)


async def write_file(settings: Settings, image: Checked) -> bool:
    """Put the bytes in place, atomically, unless an identical file already is; whether it wrote."""
    return await anyio.to_thread.run_sync(place, image_path(settings, image.sha256), io.BytesIO(image.content))


def place(path: Path, source: IO[bytes]) -> bool:
    """Copy ``source`` to ``path`` through a temporary file renamed into place, unless the file
    is already there (the same name is the same bytes); whether it wrote. Blocking."""
    if path.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as out:
            shutil.copyfileobj(source, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


async def discard_unused(session: AsyncSession, data_dir: Path, sha256s: Iterable[str]) -> int:
    """Remove the files of these hashes that no image row references (in ``session``'s view:
    call it after the transaction that would have referenced them failed); how many went."""
    wanted = set(sha256s)
    if not wanted:
        return 0
    used = set((await session.execute(select(Image.sha256).where(Image.sha256.in_(wanted)))).scalars())
    gone = [stored_at(data_dir, sha) for sha in wanted - used]

    def remove() -> None:
        for path in gone:
            path.unlink(missing_ok=True)

    await anyio.to_thread.run_sync(remove)
    return len(gone)


async def save(session: AsyncSession, caller: Caller, image: Checked, source_url: str | None) -> Image:
    """The caller's row for this image: a new one, or the one they already have."""
    row = await session.scalar(
        insert(Image)
        .values(user_id=caller.user_id, sha256=image.sha256, content_type=image.content_type,
                size=len(image.content), source_url=source_url)
        .on_conflict_do_nothing(constraint="uq_images_user_sha256")
        .returning(Image)
    )
    if row is None:
        row = await session.scalar(select(Image).where(owned_by(Image, caller), Image.sha256 == image.sha256))
    assert isinstance(row, Image)
    return row


@dataclass(frozen=True, slots=True)
class Stored:
    """What serving an image needs of its row."""

    id: int
    sha256: str
    content_type: str
    size: int


_STORED = (Image.id, Image.sha256, Image.content_type, Image.size)


async def load(session: AsyncSession, caller: Caller, image_id: int) -> Stored:
    """An image the caller may see (see :func:`fable_core.tools.access.image_readable`), else NotFound.
    Columns, not an entity: this is the hot path of every image a page shows."""
    row = (await session.execute(select(*_STORED).where(Image.id == image_id, owned_by(Image, caller)))).first()
    if row is None:  # someone else's: visible through a note shared with the caller that embeds it
        reach = await reach_of(session, caller)
        if not reach.alone:
            row = (await session.execute(select(*_STORED).where(Image.id == image_id, image_readable(reach)))).first()
    if row is None:
        raise NotFound(f"image {image_id} not found", kind="image", id=image_id)
    return Stored(*row)


INLINE_READ = 64 * 1024
"""Files up to this size are read in the event loop: from the page cache that takes ~10 µs, a
tenth of the hop to a worker thread; larger ones are read in a thread."""


async def read_bytes(settings: Settings, row: Stored) -> bytes:
    path = image_path(settings, row.sha256)
    try:
        if row.size <= INLINE_READ:
            return path.read_bytes()
        return await anyio.Path(path).read_bytes()
    except FileNotFoundError as e:
        raise NotFound(f"image {row.id}'s file is missing from the data dir", kind="image", id=row.id) from e
