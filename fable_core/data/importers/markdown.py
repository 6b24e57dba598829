"""Markdown files of a vault (Obsidian, basic-memory) as notes: front matter, tags, links.

Front matter is read by :mod:`fable_core.db.frontmatter`; front matter that cannot be read is
reported and kept as text at the top of the body, so nothing of the note is lost. Inline ``#tags`` count outside
code (fenced blocks and backticks); a heading's ``#`` is not a tag. Tags are cleaned to what
Fable accepts (``a-z0-9_-./``); a folder becomes a tag too (``folder/sub``).
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Any

from fable_core.db.frontmatter import Parsed, as_list_plain, parse_front_matter, parse_markdown, without_keys
from fable_core.db.hashtags import inline_tags

__all__ = ["Parsed", "as_list_plain", "clean_tag", "folder_tag", "inline_tags", "parse_front_matter",
           "parse_markdown", "without_keys"]

_TAG_OK = re.compile(r"^[\w][\w\-./]*$", re.UNICODE)
_TAG_BAD = re.compile(r"[^\w\-./]+", re.UNICODE)
MAX_TAGS = 50


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
