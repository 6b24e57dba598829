"""An image's type from its first bytes, never from what a server or a client claims.

PNG, JPEG, GIF, WebP and AVIF are images a browser shows without running anything. SVG is
refused: it is XML that may carry script and external references. Anything else (an HTML page
served as ``image/png``, a PDF) is refused too.
"""

from __future__ import annotations

from fable_core.errors import InvalidInput

__all__ = ["NotAnImage", "sniff"]

_AVIF_BRANDS = (b"avif", b"avis")


class NotAnImage(InvalidInput):
    """Raised when bytes given or fetched as an image are not one of the image types Fable keeps."""

    type = "not_an_image"


def sniff(content: bytes) -> str:
    """The content type ``content`` starts like: ``image/png``, ``image/jpeg``, ``image/gif``,
    ``image/webp`` or ``image/avif``; NotAnImage otherwise."""
    head = content[:32]
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[4:8] == b"ftyp" and head[8:12] in _AVIF_BRANDS:
        return "image/avif"
    if _looks_like_svg(content[:1024]):
        raise NotAnImage("SVG images are refused: they can carry script; save a PNG, JPEG, GIF, WebP or AVIF",
                         content_type="image/svg+xml")
    raise NotAnImage("this is not a PNG, JPEG, GIF, WebP or AVIF image (judged by its bytes, not its "
                     "declared type)")


def _looks_like_svg(head: bytes) -> bool:
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return text.startswith((b"<svg", b"<?xml", b"<!doctype svg")) and b"<svg" in text
