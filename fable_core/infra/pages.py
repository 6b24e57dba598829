"""Readable text of a web page, with the standard library's HTML parser.

The page's ``<article>`` if it has one, else its ``<main>``, else its ``<body>``; without
``script``, ``style``, ``nav``, ``header``, ``footer``, ``aside``, ``form`` (and what never shows:
``noscript``, ``template``, ``svg``, ``iframe``). Headings become markdown headings, paragraphs
and list items their own lines, everything else runs together; whitespace is collapsed. About
2 ms for a 100 kB page, linear in the markup whatever its nesting (12,000 unclosed ``<svg>`` then
12,000 ``</b>`` took 15 s when the skipped tags were searched as a list). Malformed markup is read
as far as it goes: :func:`readable_text` never raises.
"""

from __future__ import annotations

import re
from collections import Counter
from html.parser import HTMLParser

from fable_core.infra.offload import Budget, offload

__all__ = ["EXTRACT", "Page", "printable", "read_page", "readable_text"]

EXTRACT = Budget("reading a web page", 5_000_000, 5.0)
"""One page's markup, off the event loop (:mod:`fable_core.infra.offload`): fetches stop at a few MB."""

_SKIPPED = frozenset({"script", "style", "nav", "header", "footer", "aside", "form", "noscript", "template",
                      "svg", "iframe", "button", "select", "textarea"})
_BLOCKS = frozenset({"p", "div", "section", "li", "tr", "br", "blockquote", "pre", "dd", "dt", "table",
                     "ul", "ol", "figure", "figcaption"})
_ITEMS = frozenset({"li", "tr", "dt", "dd"})  # a line each: a new line where one starts, nothing where it ends
_HEADINGS = {f"h{n}": "#" * n for n in range(1, 7)}
_VOID = frozenset({"br", "img", "hr", "meta", "link", "input", "area", "base", "col", "embed", "source",
                   "track", "wbr"})
_CONTAINERS = ("article", "main", "body")
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # never text; PostgreSQL refuses NUL
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")


class Page:
    """What :func:`readable_text` found: the title and the text."""

    __slots__ = ("text", "title")

    def __init__(self, title: str, text: str) -> None:
        self.title = title
        self.text = text


class _Reader(HTMLParser):
    """Collects the text of each container (article, main, body) separately, in one pass."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: dict[str, list[str]] = {name: [] for name in _CONTAINERS}
        self.open: dict[str, int] = dict.fromkeys(_CONTAINERS, 0)
        self.seen: set[str] = set()
        self.skipping = 0
        self.skip_stack: list[str] = []
        self.skip_open: Counter[str] = Counter()  # the tags on skip_stack: a membership test in O(1)
        self.in_title = False
        self.title: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            if tag == "br":
                self._add("\n")
            return
        if self.skipping or tag in _SKIPPED:
            self.skipping += 1
            self.skip_stack.append(tag)
            self.skip_open[tag] += 1
            return
        if tag == "title":
            self.in_title = True
        if tag in self.open:
            self.open[tag] += 1
            self.seen.add(tag)
        if tag in _HEADINGS:
            self._add(f"\n\n{_HEADINGS[tag]} ")
        elif tag in _BLOCKS:
            self._add("\n\n" if tag == "p" else "\n")

    def handle_endtag(self, tag: str) -> None:
        if self.skipping:
            if self.skip_open[tag]:  # close up to the matching tag (unclosed ones inside go too)
                while self.skip_stack:
                    self.skipping -= 1
                    popped = self.skip_stack.pop()
                    self.skip_open[popped] -= 1
                    if popped == tag:
                        break
            return
        if tag == "title":
            self.in_title = False
        if tag in _HEADINGS or (tag in _BLOCKS and tag not in _ITEMS):
            self._add("\n\n" if tag in _HEADINGS or tag == "p" else "\n")
        if tag in self.open and self.open[tag] > 0:
            self.open[tag] -= 1

    def handle_data(self, data: str) -> None:
        if self.skipping:
            return
        if self.in_title:
            self.title.append(data)
            return
        self._add(data)

    def _add(self, text: str) -> None:
        for name in _CONTAINERS:
            if self.open[name]:
                self.parts[name].append(text)
        if not self.open["body"] and "body" not in self.seen:  # a fragment without <body>
            self.parts["body"].append(text)


def readable_text(markup: str, *, limit: int = 20_000) -> Page:
    """The readable text of ``markup`` (at most ``limit`` characters) and its ``<title>``."""
    reader = _Reader()
    try:
        reader.feed(_CONTROLS.sub("", markup))
        reader.close()
    except AssertionError:  # the standard parser gives up on some malformed markup ("<![ x"): keep what it read
        pass
    chosen = next((name for name in ("article", "main") if name in reader.seen and _tidy(reader.parts[name])),
                  "body")
    return Page(" ".join("".join(reader.title).split())[:300], _tidy(reader.parts[chosen])[:limit])


async def read_page(markup: str, *, limit: int = 20_000) -> Page:
    """:func:`readable_text` on a worker thread, within :data:`EXTRACT`."""
    return await offload(EXTRACT, len(markup), readable_text, markup, limit=limit)


def printable(text: str) -> str:
    """``text`` without control characters but tabs and line breaks (a model's answer, a plain
    text page): nothing a note cannot hold."""
    return _CONTROLS.sub("", text)


def _tidy(parts: list[str]) -> str:
    lines = (_SPACES.sub(" ", line).strip() for line in "".join(parts).split("\n"))
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip()
