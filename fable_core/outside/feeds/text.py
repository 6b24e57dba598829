"""Feed HTML as plain text: what Fable keeps of an entry's markup.

A feed's HTML is untrusted. Fable never stores it as markup, so nothing from a feed can run as
script wherever an item is shown: tags are dropped (``script``, ``style`` and the like with their
content), entities decoded, block elements become line breaks and runs of blanks one space.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

__all__ = ["html_text", "plain"]

_BLOCKS = frozenset({"address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "figcaption",
                     "figure", "footer", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "ol", "p",
                     "pre", "section", "table", "tr", "ul"})
_HIDDEN = frozenset({"script", "style", "template", "noscript", "iframe", "object", "svg", "math", "head", "title"})
_LINE_STARTS = frozenset({"br", "li", "dt", "dd", "tr"})  # a line of its own; the others a paragraph
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")
_LINES = re.compile(r"\s*\n\s*(\n\s*)+")


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HIDDEN:
            self.hidden += 1
        elif tag in _BLOCKS:
            self.parts.append(_break(tag))

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif tag in _BLOCKS and tag not in _LINE_STARTS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(data)


def _break(tag: str) -> str:
    return "\n" if tag in _LINE_STARTS else "\n\n"


def html_text(markup: str, limit: int = 50_000) -> str:
    """The readable text of ``markup``: paragraphs kept apart by a blank line, at most ``limit``
    characters."""
    parser = _Text()
    parser.feed(markup[: limit * 4])
    parser.close()
    return _tidy("".join(parser.parts))[:limit]


def plain(value: str, limit: int) -> str:
    """One line of text (a title, an author) from text that may hold markup."""
    text = html_text(value, limit * 2) if "<" in value or "&" in value else value
    return " ".join(text.split())[:limit]


def _tidy(text: str) -> str:
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return _LINES.sub("\n\n", "\n".join(lines)).strip()
