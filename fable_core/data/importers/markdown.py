"""Markdown files of a vault (Obsidian, basic-memory) as notes: front matter, tags, links.

Front matter is the small YAML subset vaults use: ``key: value`` lines, ``[a, b]`` lists and
``- item`` blocks, quoted strings. Front matter that cannot be read is reported and kept as
text at the top of the body, so nothing of the note is lost. Inline ``#tags`` count outside
code (fenced blocks and backticks); a heading's ``#`` is not a tag. Tags are cleaned to what
Fable accepts (``a-z0-9_-./``); a folder becomes a tag too (``folder/sub``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

__all__ = ["Parsed", "clean_tag", "folder_tag", "inline_tags", "parse_front_matter", "parse_markdown"]

_KEY = re.compile(r"^([A-Za-z_][\w\- ]*):(?:\s+(.*)|)$")
_ITEM = re.compile(r"^\s*-\s+(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_INLINE_TAG = re.compile(r"(?:(?<=\s)|^)#([\w][\w\-/]*)", re.UNICODE | re.MULTILINE)
_TAG_OK = re.compile(r"^[\w][\w\-./]*$", re.UNICODE)
_TAG_BAD = re.compile(r"[^\w\-./]+", re.UNICODE)
MAX_TAGS = 50


@dataclass(slots=True)
class Parsed:
    meta: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    problem: str | None = None  # why front matter was not read


def parse_markdown(text: str) -> Parsed:
    """Split ``text`` into front matter and body."""
    text = text.removeprefix("\ufeff")
    if not text.startswith("---"):
        return Parsed(body=text)
    lines = text.split("\n")
    if lines[0].rstrip() != "---":
        return Parsed(body=text)
    for end in range(1, len(lines)):
        if lines[end].rstrip() in ("---", "..."):
            break
    else:
        return Parsed(body=text, problem="front matter is not closed by ---")
    try:
        meta = parse_front_matter(lines[1:end])
    except ValueError as e:
        return Parsed(body=text, problem=f"front matter unreadable ({e})")
    return Parsed(meta=meta, body="\n".join(lines[end + 1:]).lstrip("\n"))


def parse_front_matter(lines: list[str]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    key: str | None = None
    for number, line in enumerate(lines, 2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = _ITEM.match(line)
        if item and key is not None and isinstance(meta.get(key), list):
            meta[key].append(_scalar(item.group(1)))
            continue
        if line[:1].isspace() and key is not None:
            if isinstance(meta.get(key), list) and not meta[key]:
                raise ValueError(f"line {number}: nested values are not supported")
            continue  # a nested mapping: not a field Fable reads
        match = _KEY.match(line)
        if match is None:
            raise ValueError(f"line {number}: expected 'key: value'")
        key, value = match.group(1).strip().lower(), (match.group(2) or "").strip()
        if not value:
            meta[key] = []
        elif value.startswith("["):
            if not value.endswith("]"):
                raise ValueError(f"line {number}: unclosed [list]")
            meta[key] = [_scalar(v) for v in value[1:-1].split(",") if v.strip()]
        else:
            meta[key] = _scalar(value)
    return meta


def _scalar(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    if value.startswith(("\"", "'")):
        raise ValueError(f"unclosed quote in {value[:40]!r}")
    return re.sub(r"\s+#.*$", "", value)


def as_list(value: Any) -> list[str]:
    if value is None or value == []:
        return []
    if isinstance(value, list):
        return [str(v) for v in value if str(v).strip()]
    return [v for v in re.split(r"[,\s]+", str(value)) if v]


def as_date(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        try:
            parsed = datetime.combine(date.fromisoformat(value[:10]), datetime.min.time())
        except ValueError:
            return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def inline_tags(body: str) -> list[str]:
    """``#tags`` in the text, outside code; headings (``# Title``) are not tags."""
    found: list[str] = []
    fenced = False
    for line in body.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or line.startswith(("    ", "\t")):
            continue
        for match in _INLINE_TAG.finditer(_INLINE_CODE.sub(" ", line)):
            tag = match.group(1).rstrip("/")
            if not tag.replace("_", "").isdigit():
                found.append(tag)
    return found


def clean_tag(tag: str) -> str | None:
    tag = _TAG_BAD.sub("-", tag.strip().lstrip("#").lower()).strip("-./")
    while "//" in tag:
        tag = tag.replace("//", "/")
    return tag[:64] if tag and _TAG_OK.match(tag[:64]) else None


def folder_tag(path: str) -> str | None:
    folder = path.rpartition("/")[0]
    return clean_tag(folder) if folder else None


def tags_of(*groups: list[str]) -> list[str]:
    tags: list[str] = []
    for group in groups:
        for raw in group:
            tag = clean_tag(raw)
            if tag and tag not in tags and len(tags) < MAX_TAGS:
                tags.append(tag)
    return tags


def as_list_plain(value: Any) -> list[str]:
    """A list value as is (aliases may hold spaces), a single value as one item."""
    if isinstance(value, list):
        return [str(v) for v in value if str(v).strip()]
    return [str(value)] if isinstance(value, str) and value.strip() else []
