"""The Markdown ZIP: one ``.md`` file per note, front matter first, a folder per project.

Front matter is YAML whose values are written as JSON (a subset of YAML 1.2), one ``key: value``
line each, so any YAML reader (and a line-by-line JSON reader) parses it back. Bodies are kept as
written, ``[[wikilinks]]`` included. File names are the titles made safe for every file system
(no separators, control or reserved characters, no Windows device names, at most 120
characters) and unique within their folder, case-insensitively: ``Plan.md``, ``Plan (2).md``.

The archive is written as it is read: :class:`ZipStream` hands out each file's compressed bytes
as soon as it is added (a ZIP on a non-seekable stream carries data descriptors).
"""

from __future__ import annotations

import json
import re
import zipfile
from datetime import date, datetime
from typing import Any

__all__ = ["ZipStream", "front_matter", "safe_name"]

_UNSAFE = re.compile(r'[\x00-\x1f\x7f<>:"/\\|?*]+')
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
_MAX_NAME = 120


def safe_name(title: str, fallback: str = "Untitled") -> str:
    """``title`` as a file or folder name every common file system accepts (without extension)."""
    name = _UNSAFE.sub("-", title).strip(" .")[:_MAX_NAME].strip(" .")
    if not name:
        return fallback
    if name.split(".", 1)[0].casefold() in _RESERVED:
        name = f"{name}_"
    return name


class UniqueNames:
    """Names handed out once per folder, case-insensitively (``Plan``, ``Plan (2)``...)."""

    def __init__(self) -> None:
        self._taken: set[str] = set()

    def take(self, folder: str, stem: str, suffix: str = "") -> str:
        n = 1
        while True:
            name = f"{stem}{suffix}" if n == 1 else f"{stem} ({n}){suffix}"
            key = f"{folder}/{name}".casefold()
            if key not in self._taken:
                self._taken.add(key)
                return name
            n += 1


def _scalar(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


_ENCODE = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str).encode  # one encoder: json.dumps
# with options builds a new one per call, a third of an export's time


def front_matter(meta: dict[str, Any], extra: list[str] | None = None) -> str:
    """``---``, one ``key: <JSON>`` line per present value, the ``extra`` lines as they are, ``---``."""
    lines = ["---"]
    for key, value in meta.items():
        if value is None or value == [] or value == {}:
            continue
        lines.append(f"{key}: {_ENCODE(_scalar(value))}")
    lines += extra or []
    lines.append("---")
    return "\n".join(lines) + "\n"


class _Sink:
    """A write-only file object collecting what the ZIP writer produces until it is drained."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def write(self, data: bytes) -> int:
        self._parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def drain(self) -> bytes:
        out = b"".join(self._parts)
        self._parts.clear()
        return out


class ZipStream:
    """A ZIP archive written file by file; :meth:`drain` returns the bytes produced so far."""

    def __init__(self) -> None:
        self._sink = _Sink()
        self._zip = zipfile.ZipFile(self._sink, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1)

    def add(self, path: str, text: str, when: datetime | None = None) -> None:
        stamp = max(when.timetuple()[:6], (1980, 1, 1, 0, 0, 0)) if when else (1980, 1, 1, 0, 0, 0)
        info = zipfile.ZipInfo(path, date_time=stamp)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        self._zip.writestr(info, text.encode("utf-8"), compresslevel=1)

    def drain(self) -> bytes:
        return self._sink.drain()

    def close(self) -> bytes:
        self._zip.close()
        return self._sink.drain()
