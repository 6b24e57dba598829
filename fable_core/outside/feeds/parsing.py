"""Reading a fetched feed: feedparser on the bytes (in a worker thread: a big feed never blocks
the event loop), its entries turned into :class:`Entry` values of plain text.

What is not a feed is refused with a clear :class:`InvalidInput`: an HTML page (the address of
a site rather than of its feed), anything feedparser recognises no RSS or Atom in, and a feed so
broken that none of its entries can be read. A feed with some damage (a wrong encoding, a stray
character) is taken for the entries that can be read, as readers do.

feedparser is only ever given a stream of bytes: given a string it would open it as a URL or a
file name itself, past the SSRF guard.
"""

from __future__ import annotations

import calendar
import hashlib
import io
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import feedparser

from fable_core.errors import InvalidInput
from fable_core.infra.offload import Budget, offload
from fable_core.outside.feeds.text import html_text, plain

__all__ = ["MAX_ITEMS", "Entry", "NotAFeed", "Parsed", "parse"]

MAX_ITEMS = 100  # the newest entries kept per feed


class NotAFeed(InvalidInput):
    """Raised when fetched content is not an RSS or Atom feed, or a feed none of whose entries
    can be read."""

    type = "not_a_feed"


@dataclass(frozen=True, slots=True)
class Entry:
    guid: str
    title: str
    link: str | None
    content: str
    author: str | None
    published: datetime | None


@dataclass(frozen=True, slots=True)
class Parsed:
    title: str
    site_url: str | None
    entries: list[Entry]  # newest first, at most MAX_ITEMS, each guid once


PARSE = Budget("reading a feed", 5_000_000, 10.0, unit="bytes")
"""One feed's bytes (fetches stop at 5 MB), off the event loop (:mod:`fable_core.infra.offload`)."""


async def parse(content: bytes, url: str, content_type: str = "") -> Parsed:
    """The feed in ``content`` (fetched from ``url``, which relative links resolve against)."""
    return await offload(PARSE, len(content), _parse, content, url, content_type)


def _parse(content: bytes, url: str, content_type: str) -> Parsed:
    result = feedparser.parse(io.BytesIO(content), response_headers={
        "content-type": content_type or "application/xml", "content-location": url})
    version = result.get("version") or ""
    if not version:
        raise NotAFeed(f"{url[:200]!r} is {_what(content, content_type)}, not an RSS or Atom feed; "
                       "subscribe to the feed's own address (often linked as RSS or Atom on the site)", url=url[:200])
    entries = _entries(result.get("entries") or [])
    if result.get("bozo") and not entries:
        reason = str(result.get("bozo_exception") or "it cannot be parsed")[:200]
        raise NotAFeed(f"the feed at {url[:200]!r} is malformed ({reason}); no entry could be read", url=url[:200])
    feed = result.get("feed") or {}
    link = feed.get("link")
    return Parsed(title=plain(str(feed.get("title") or ""), 200), entries=entries,
                  site_url=link if isinstance(link, str) and link.startswith(("http://", "https://")) else None)


def _what(content: bytes, content_type: str) -> str:
    head = content[:512].lstrip().lower()
    if "html" in content_type or head.startswith((b"<!doctype html", b"<html")):
        return "a web page"
    return "empty" if not content.strip() else "something else"


def _entries(raw: list[Any]) -> list[Entry]:
    seen: set[str] = set()
    entries: list[Entry] = []
    for item in raw:
        entry = _entry(item)
        if entry is not None and entry.guid not in seen:
            seen.add(entry.guid)
            entries.append(entry)
    # newest first; undated entries keep the feed's order after the dated ones
    entries.sort(key=lambda e: e.published or datetime.min.replace(tzinfo=UTC), reverse=True)
    return entries[:MAX_ITEMS]


def _entry(item: Any) -> Entry | None:
    link = item.get("link")
    link = link[:2000] if isinstance(link, str) and link.startswith(("http://", "https://")) else None
    title = plain(str(item.get("title") or ""), 500)
    content = _content(item)
    guid = str(item.get("id") or link or "")[:1000]
    if not guid and (title or content):
        guid = "sha256:" + hashlib.sha256(f"{title}\0{content}".encode()).hexdigest()
    if not guid:
        return None
    author = plain(str(item.get("author") or ""), 200) or None
    return Entry(guid=guid, title=title or (content[:80] if content else link or "untitled"), link=link,
                 content=content, author=author, published=_date(item))


def _content(item: Any) -> str:
    """The longest of the entry's content and summary, as text."""
    candidates = [c.get("value", "") for c in item.get("content") or [] if isinstance(c, dict)]
    candidates.append(item.get("summary") or "")
    best = max((str(c) for c in candidates), key=len, default="")
    return html_text(best)


def _date(item: Any) -> datetime | None:
    for key in ("published_parsed", "updated_parsed", "created_parsed"):
        value = item.get(key)
        if value:
            try:
                return datetime.fromtimestamp(calendar.timegm(value), UTC)
            except (OverflowError, ValueError, OSError):
                continue
    return None
