"""Markdown headings as addressable sections, so agents read and edit notes in parts."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Section", "find_section", "outline"]

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^(```|~~~)")


@dataclass(frozen=True, slots=True)
class Section:
    level: int
    title: str
    start: int  # offset of the heading line
    content_start: int  # offset just after the heading line
    end: int  # offset where the next heading of the same or higher level starts


def outline(body: str) -> list[Section]:
    """Every heading in ``body`` (ignoring fenced code), with the span its section covers."""
    heads: list[tuple[int, str, int, int]] = []
    offset, in_fence = 0, False
    for line in body.splitlines(keepends=True):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and (m := _HEADING.match(line.rstrip("\r\n"))):
            heads.append((len(m.group(1)), m.group(2).strip(), offset, offset + len(line)))
        offset += len(line)
    sections = []
    for i, (level, title, start, content_start) in enumerate(heads):
        end = next((h[2] for h in heads[i + 1 :] if h[0] <= level), len(body))
        sections.append(Section(level, title, start, content_start, end))
    return sections


def find_section(body: str, name: str) -> Section | None:
    """The first section whose heading matches ``name`` (case-insensitive, '#' optional)."""
    wanted = name.strip().lstrip("#").strip().casefold()
    return next((s for s in outline(body) if s.title.casefold() == wanted), None)
