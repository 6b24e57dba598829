"""Tags: how a tag is written, and the ``#tags`` a note's text gives it, as Obsidian reads them.

A note's tags (``Note.tags``, the column every reader uses) are the tags given to it plus the
``#tags`` written in its body; ``Note.inline_tags`` remembers which came from the text, so that
deleting ``#kitchen`` from the text takes the tag away, and an edit of the tags cannot (the
model keeps both, :class:`~fable_core.db.models.Note`). A ``#tag`` counts outside code (fenced
blocks, indented code, backticks) and front matter; a heading's ``#`` is not one, nor a word of
digits (``#2024``); a word that is no valid tag (longer than 64 characters) is just text. The
renderer links what :func:`hashtag` calls a tag, so a ``#tag`` link leads to the notes it tags.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from fable_core.db.frontmatter import parse_markdown

__all__ = ["MAX_TAGS", "WORD", "hashtag", "inline_tags", "normalise_tag", "text_tags", "with_text_tags"]

MAX_TAGS = 50
"""Tags a note carries at most: given ones first, then the text's."""
_HEAD = 65_536
"""How much of a body its ``#tags`` are read from: the model reads them on every save, so a
1 MB body is never split into lines for it (as its aliases, :mod:`.frontmatter`)."""
_TAG = re.compile(r"^[\w][\w\-./]*$", re.UNICODE)
_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
WORD = re.compile(r"#([\w][\w\-/]*)", re.UNICODE)
"""A ``#tag`` as written: what follows the ``#`` (after a space or at the start of a line)."""
_INLINE_TAG = re.compile(r"(?:(?<=\s)|^)" + WORD.pattern, re.UNICODE | re.MULTILINE)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])(?:\s|$)")


def normalise_tag(tag: str) -> str:
    """``tag`` as stored: lower case, without ``#`` or outer ``/``; ValueError when it is no tag."""
    tag = tag.strip().lstrip("#").strip("/").lower()
    if not tag or len(tag) > 64 or not _TAG.match(tag) or "//" in tag:
        raise ValueError(
            f"tag {tag!r} must be 1-64 letters, digits, '-', '_', '.' or '/' (for hierarchy)"
        )
    return tag


def hashtag(word: str) -> str | None:
    """The tag ``#word`` makes (``word`` as :data:`WORD` finds it after the ``#``), or None: a
    word of digits (``#2024``) or no valid tag is text. The renderer links what this names."""
    word = word.rstrip("/")
    if word.replace("_", "").isdigit():
        return None
    try:
        return normalise_tag(word)
    except ValueError:
        return None


def inline_tags(body: str) -> list[str]:
    """``#tags`` in the text as written, outside code; headings (``# Title``) are not tags.

    A line indented four spaces (or a tab) is code when it starts a block (after a blank line, or
    more code) outside a list; inside a list it is a nested item's text, and after a line of
    text its continuation, as Markdown has them."""
    found: list[str] = []
    fenced = in_list = in_code = False
    after_blank = True
    for line in body.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
            in_code, after_blank = False, True
            continue
        if fenced:
            continue
        if not line.strip():
            after_blank = True
            continue
        indented = line.startswith(("    ", "\t"))
        in_code = indented and not in_list and (after_blank or in_code)
        after_blank = False
        if in_code:
            continue
        in_list = bool(_LIST_ITEM.match(line)) or (in_list and indented)
        words = (m.group(1).rstrip("/") for m in _INLINE_TAG.finditer(_INLINE_CODE.sub(" ", line)))
        found.extend(w for w in words if w and not w.replace("_", "").isdigit())
    return found


def text_tags(body: str) -> list[str] | None:
    """The tags ``body``'s ``#tags`` give its note (read from its first 64 KB, past its front
    matter), each once, at most :data:`MAX_TAGS`; None when there are none."""
    head = body[:_HEAD]
    if "#" not in head:
        return None  # the common case, at no cost
    if head.startswith("---"):
        head = parse_markdown(head).body
    tags: dict[str, None] = {}
    for word in inline_tags(head):
        if (tag := hashtag(word)) is not None:  # else not a tag, just text
            tags[tag] = None
            if len(tags) == MAX_TAGS:
                break
    return list(tags) or None


def with_text_tags(given: Iterable[str], text: Iterable[str] | None) -> list[str]:
    """A note's tags: the ``given`` ones, then those of its ``text`` not among them, at most
    :data:`MAX_TAGS`."""
    return list(dict.fromkeys([*given, *(text or ())]))[:MAX_TAGS]
