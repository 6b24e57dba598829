"""Reading an uploaded export safely: a ZIP's files, with every limit checked before a byte is
inflated past it.

A name that leaves the archive (absolute, ``..``, a drive letter, a backslash) refuses the whole
archive, as does one more file than ``MAX_FILES`` or more inflated bytes than ``MAX_TOTAL``
(a ZIP bomb): the sizes the directory declares are checked first, and inflation stops at the
declared size, so a lying directory cannot make us inflate more. Directories, and the files
macOS and Obsidian keep beside the data (``__MACOSX/``, ``.obsidian/``, ``.trash/``, dot files),
are left out.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from typing import IO

from fable_core.errors import InvalidInput, PayloadTooLarge
from fable_core.infra.offload import Budget, offload

__all__ = ["IMPORT", "MAX_FILE", "MAX_FILES", "MAX_TOTAL", "Entry", "Source", "is_zip", "read_zip", "size_of", "unpack"]

MAX_FILES = 20_000
MAX_TOTAL = 256_000_000
MAX_FILE = 16_000_000
_CHUNK = 1 << 16
IMPORT = Budget("reading the upload", MAX_TOTAL, 60.0, unit="bytes")
"""Inflating and parsing an export, off the event loop (:mod:`fable_core.infra.offload`): the largest
archive inflates in well under a minute; the parsing after it has the same budget."""


@dataclass(frozen=True, slots=True)
class Entry:
    path: str  # relative, "/"-separated
    content: bytes | None  # None: larger than MAX_FILE, not read
    size: int


Source = bytes | IO[bytes]  # an upload in memory, or spooled to disk (a seekable file at 0)


def is_zip(content: Source) -> bool:
    if isinstance(content, bytes | bytearray):
        return bytes(content[:4]) in (b"PK\x03\x04", b"PK\x05\x06")
    head = content.read(4)
    content.seek(0)
    return head in (b"PK\x03\x04", b"PK\x05\x06")


def size_of(content: Source) -> int:
    if isinstance(content, bytes | bytearray):
        return len(content)
    at = content.seek(0, io.SEEK_END)
    content.seek(0)
    return at


def read_zip(content: Source, field: str = "content", max_file: int | None = None) -> list[Entry]:
    """The archive's files, in archive order (a file over ``max_file`` bytes, MAX_FILE by default,
    without its content); InvalidInput / PayloadTooLarge for a bad archive."""
    max_file = MAX_FILE if max_file is None else max_file
    try:
        archive = zipfile.ZipFile(io.BytesIO(content) if isinstance(content, bytes | bytearray) else content)
        infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as e:
        raise InvalidInput(f"not a readable ZIP archive: {e}", field=field) from e
    files = [i for i in infos if not i.is_dir() and not _ignored(i.filename)]
    if len(files) > MAX_FILES:
        raise PayloadTooLarge(f"the archive holds {len(files)} files; at most {MAX_FILES} are imported",
                              limit=MAX_FILES)
    for info in files:
        _check_name(info.filename, field)
    total = sum(i.file_size for i in files if i.file_size <= max_file)
    if total > MAX_TOTAL:
        raise PayloadTooLarge(f"the archive inflates to {total} bytes; at most {MAX_TOTAL} are imported",
                              limit=MAX_TOTAL)
    entries = []
    for info in files:
        path = info.filename.strip("/")
        if info.file_size > max_file:
            entries.append(Entry(path, None, info.file_size))
            continue
        entries.append(Entry(path, _inflate(archive, info, field), info.file_size))
    return entries


async def unpack(content: Source, field: str = "content", max_file: int | None = None) -> list[Entry]:
    """:func:`read_zip` on a worker thread, within :data:`IMPORT`."""
    return await offload(IMPORT, size_of(content), read_zip, content, field, max_file)


def _ignored(name: str) -> bool:
    parts = name.replace("\\", "/").split("/")
    return parts[0] == "__MACOSX" or any(p.startswith(".") and p not in (".", "..") for p in parts)


def _check_name(name: str, field: str) -> None:
    parts = name.split("/")
    if (not name or name.startswith("/") or "\\" in name or "\x00" in name or ".." in parts
            or (len(name) > 1 and name[1] == ":")):
        raise InvalidInput(f"the archive names a file outside itself ({name[:100]!r}); nothing was imported",
                           field=field)


def _inflate(archive: zipfile.ZipFile, info: zipfile.ZipInfo, field: str) -> bytes:
    out = bytearray()
    try:
        with archive.open(info) as stream:
            while chunk := stream.read(_CHUNK):
                out += chunk
                if len(out) > info.file_size:
                    raise PayloadTooLarge(f"{info.filename[:100]!r} inflates past its declared size",
                                          limit=info.file_size)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, OSError,
            EOFError) as e:
        raise InvalidInput(f"{info.filename[:100]!r} cannot be read from the archive: {e}", field=field) from e
    return bytes(out)
