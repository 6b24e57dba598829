"""Markdown's code, told from its prose: fenced blocks and inline code spans.

What is written inside code is an example, not a link, an embed or a tag: ``[[Note]]`` in a
fenced block documents the syntax; it neither links nor is rewritten by an importer.
:func:`outside_code` applies a change to the prose only and leaves every code byte as it was.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

__all__ = ["outside_code", "prose"]

_FENCE = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})")
_INLINE = re.compile(r"(`+)(?:.|\n)*?(?<!`)\1(?!`)")

# Indented code blocks are left out on purpose: a line indented four spaces is as often a nested
# list item's (prose, with links) as code, and vaults write code fenced.


def _pieces(text: str) -> Iterator[tuple[bool, str]]:
    """``text`` cut into (is code, piece), in order; the pieces join back to ``text``."""
    lines = text.splitlines(keepends=True)
    fence: str | None = None
    prose_lines: list[str] = []
    for line in lines:
        opening = _FENCE.match(line)
        if fence is None and opening is not None:
            if prose_lines:
                yield from _inline("".join(prose_lines))
                prose_lines = []
            fence = opening.group(1)[0] * len(opening.group(1))
            yield True, line
        elif fence is not None:
            if line.lstrip(" ").startswith(fence) and line.strip().strip(fence[0]) == "":
                fence = None
            yield True, line
        else:
            prose_lines.append(line)
    if prose_lines:
        yield from _inline("".join(prose_lines))


def _inline(text: str) -> Iterator[tuple[bool, str]]:
    at = 0
    for match in _INLINE.finditer(text):
        if match.start() > at:
            yield False, text[at:match.start()]
        yield True, match.group(0)
        at = match.end()
    if at < len(text):
        yield False, text[at:]


def outside_code(text: str, change: Callable[[str], str]) -> str:
    """``text`` with ``change`` applied to its prose; its code untouched."""
    return "".join(piece if code else change(piece) for code, piece in _pieces(text))


def prose(text: str) -> str:
    """``text`` with its code blanked (each code piece a space or a newline): for finding links
    and tags in the prose alone."""
    if "`" not in text and "~~~" not in text:
        return text  # no code possible: the common case, at no cost
    return "".join(("\n" * piece.count("\n") or " ") if code else piece for code, piece in _pieces(text))
