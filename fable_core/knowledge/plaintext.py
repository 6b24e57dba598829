"""A note's body as the plain text a reader sees: what previews and snippets show.

``plain_text("# Plan\\n\\nCall [[Bob|him]] **today**", 40)`` is ``"Plan Call him today"``: markup
dropped, links and wikilinks as their labels, front matter, callout markers, checkboxes and
HTML left out, code kept as its text, whitespace folded, cut at ``limit`` with an ellipsis.
Only the start of a long body is parsed: a preview never needs the rest.
"""

from __future__ import annotations

import functools
import re

from markdown_it import MarkdownIt
from markdown_it.token import Token

from fable_core.knowledge.wikilinks import split_target

__all__ = ["parsed_chars", "plain_text"]

# front matter, closed or cut off by the part of the body that was read
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(?:.*?\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)|.*\Z)", re.DOTALL)
_WIKILINK = re.compile(r"!?\[\[([^\[\]|\n]{1,300})(?:\|([^\[\]\n]{0,300}))?\]\]")
_MARKERS = re.compile(r"\[![A-Za-z-]{1,20}\][+-]?|^\[[ xX]\][ \t]|==")
_SPACE = re.compile(r"\s+")
_MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])
_PARSED = 3  # how many times ``limit`` characters of the body are parsed (markup is seldom denser)


def _label(match: re.Match[str]) -> str:
    title, heading = split_target(match.group(1))
    return (match.group(2) or "").strip() or title or heading or ""


def _inline_text(token: Token) -> str:
    return "".join(_MARKERS.sub("", c.content) if c.type == "text" else c.content if c.type == "code_inline"
                   else " " if c.type in ("softbreak", "hardbreak") else "" for c in token.children or [])


def plain_text(markdown: str, limit: int) -> str:
    """``markdown`` as plain text of at most ``limit`` characters (an ellipsis ends a cut one)."""
    return _plain(markdown[: parsed_chars(limit)], limit)


def parsed_chars(limit: int) -> int:
    """How much of a body :func:`plain_text` reads for ``limit`` characters: a query need fetch no more."""
    return max(limit, 1) * _PARSED + 200


# What markup can change: the characters of inline markup, entities, escapes and HTML, and
# what opens a block at the start of a line (headings, lists, quotes, fences, front matter,
# tables). Text without any (most of a search's fragments: prose) reads as itself, its
# whitespace folded, and is not parsed: parsing was a fifth of a search's time.
_MARKUP = re.compile(r"[\\`*_\[\]<&|~=#\x00]|^[ \t]*(?:[-+>]|\d{1,9}[.)])", re.MULTILINE)


def _cut(text: str, limit: int) -> str:
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


@functools.lru_cache(maxsize=4096)
def _plain(start: str, limit: int) -> str:
    """:func:`plain_text` of a body's start, remembered: every list of notes asks again for the
    same previews (a reload, the next page, another reader of a shared note), and parsing them
    was most of a previewed list's cost (about 5 of its 8 ms of CPU for 30 rows). A key is the
    parsed start only, so 4,096 of them stay within a few MB."""
    return _cut(start, limit) if _MARKUP.search(start) is None else _parsed(start, limit)


def _parsed(start: str, limit: int) -> str:
    """The text of ``start`` as markdown-it parses it."""
    source = _FRONT_MATTER.sub("", start, count=1)
    source = _WIKILINK.sub(_label, source)
    parts = []
    for token in _MD.parse(source):
        if token.type == "inline":
            parts.append(_inline_text(token))
        elif token.type in ("fence", "code_block"):
            parts.append(token.content)
    return _cut(" ".join(parts), limit)
