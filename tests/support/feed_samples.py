"""RSS 2.0 and Atom documents for the feed tests, written out as text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from html import escape

__all__ = ["BASE", "atom", "rss"]

BASE = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)


def rss(title: str, items: list[tuple[str, str]], *, start: int = 0, link: str = "https://news.example/") -> str:
    """An RSS 2.0 channel; each item ``(title, html description)``, guid ``item-<n>``, the
    later ones newer (an hour apart from :data:`BASE`)."""
    entries = "".join(
        f"<item><title>{escape(t)}</title><link>https://news.example/{start + i}</link>"
        f"<guid isPermaLink=\"false\">item-{start + i}</guid>"
        f"<pubDate>{format_datetime(BASE + timedelta(hours=start + i))}</pubDate>"
        f"<description>{escape(d)}</description></item>"
        for i, (t, d) in enumerate(items))
    return (f"<?xml version=\"1.0\" encoding=\"utf-8\"?><rss version=\"2.0\"><channel><title>{escape(title)}</title>"
            f"<link>{link}</link><description>test</description>{entries}</channel></rss>")


def atom(title: str, entries: list[tuple[str, str]]) -> str:
    """An Atom feed; each entry ``(title, html content)``, id ``urn:entry:<n>``."""
    body = "".join(
        f"<entry><title>{escape(t)}</title><link href=\"https://blog.example/{i}\"/><id>urn:entry:{i}</id>"
        f"<updated>{(BASE + timedelta(days=i)).isoformat()}</updated><author><name>Ann</name></author>"
        f"<content type=\"html\">{escape(c)}</content></entry>"
        for i, (t, c) in enumerate(entries))
    return (f"<?xml version=\"1.0\" encoding=\"utf-8\"?><feed xmlns=\"http://www.w3.org/2005/Atom\">"
            f"<title>{escape(title)}</title><link href=\"https://blog.example/\"/><id>urn:blog</id>"
            f"<updated>{BASE.isoformat()}</updated>{body}</feed>")
