"""Markdown's code, told from its prose: fenced blocks and inline code spans.

What is written inside code is an example, not a link, an embed or a tag: ``[[Note]]`` in a
fenced block documents the syntax; it neither links nor is rewritten by an importer.
:func:`outside_code` applies a change to the prose only and leaves every code byte as it was.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator

__all__ = ["outside_code", "prose"]

_FENCE = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})")
_TICKS = re.compile(r"`+")

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
    """Inline code spans: a run of backticks up to the next run of the same length (CommonMark);
    a run with none after it is prose. Linear in the text, whatever runs it holds: each run is
    looked at once, its closer found by bisection in the runs of its length."""
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(text)]
    by_length: dict[int, list[int]] = {}
    for i, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(i)
    at = i = 0
    while i < len(runs):
        start, end = runs[i]
        same = by_length[end - start]
        after = bisect.bisect_right(same, i)
        if after == len(same):
            i += 1  # no closer: literal backticks
            continue
        closer = same[after]
        if start > at:
            yield False, text[at:start]
        yield True, text[start:runs[closer][1]]
        at, i = runs[closer][1], closer + 1
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
