"""Image tools: ``search_images`` (SearXNG), ``cache_image`` (fetch a URL into the store),
``upload_image`` (bytes into the store) and ``get_image`` (the bytes, served raw).

Every fetch goes through the SSRF guard; the type is decided by the bytes
(:mod:`fable_core.outside.images.sniff`); anything over ``FABLE_IMAGE_MAX_BYTES`` is refused with
nothing stored. A saved image is served from ``/api/images/<id>``, which a note embeds as
``![alt](/api/images/<id>)``.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints

from fable_core.db.models import Image
from fable_core.errors import PayloadTooLarge, Unavailable
from fable_core.infra import ssrf
from fable_core.outside.images import store
from fable_core.outside.websearch.searxng import SEARXNG, search
from fable_core.tools import Context, Route, tool
from fable_core.tools.binary import Binary, Blob
from fable_core.tools.results import absent_when_none

__all__ = ["ImageResult", "ImageResults", "SavedImage"]

Query = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=400)]
Url = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)]
Alt = Annotated[str, StringConstraints(strip_whitespace=True, max_length=200)]
ImageId = Annotated[int, Field(ge=1, le=2**31 - 1)]
_NOT_IN_ALT = re.compile(r"[\[\]\r\n]+")  # what would end the markdown's alt text
_SERVED = {
    "Cache-Control": "private, max-age=31536000, immutable",  # an id's bytes never change
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
}


class ImageResult(BaseModel):
    title: str
    page: str
    image: str | None = absent_when_none()
    thumbnail: str | None = absent_when_none()


class ImageResults(BaseModel):
    query: str
    page: int
    results: list[ImageResult]


class SavedImage(BaseModel):
    id: int
    url: str
    content_type: str
    bytes: int
    markdown: str


def _saved(row: Image, alt: str) -> SavedImage:
    url = f"/api/images/{row.id}"
    return SavedImage(id=row.id, url=url, content_type=row.content_type, bytes=row.size,
                      markdown=f"![{_NOT_IN_ALT.sub(' ', alt).strip()}]({url})")


@tool(group="images", title="Search images", scope="read", transaction="phases", open_world=True, needs=(SEARXNG,),
      route=Route("GET", "/images/search"))
async def search_images(
    ctx: Context,
    query: Query,
    page: Annotated[int, Field(ge=1, le=10)] = 1,
    limit: Annotated[int, Field(ge=1, le=20)] = 8,
) -> ImageResults:
    """Search the web for images: title, page, image and thumbnail URLs."""
    hits = await search(ctx.settings, query, category="images", page=page)
    results = [ImageResult(title=h.title, page=h.url, image=h.image, thumbnail=h.thumbnail)
               for h in hits if h.image or h.thumbnail]
    return ImageResults(query=query, page=page, results=results[:limit])


@tool(group="images", title="Cache an image", scope="write", idempotent=True, transaction="phases", open_world=True,
      confirm=True,
      route=Route("POST", "/images", status=201))
async def cache_image(ctx: Context, url: Url, alt: Alt = "") -> SavedImage:
    """Fetch a web image into your store; its markdown embeds it in a note.

    Args:
        alt: Alt text for the markdown.
    """
    limit = ctx.settings.fable_image_max_bytes
    fetched = await ssrf.fetch(url, allow=ctx.settings.fable_fetch_allow_hosts, max_bytes=limit + 1,
                               headers={"Accept": "image/avif,image/webp,image/png,image/jpeg,image/gif"})
    if fetched.status != 200:
        raise Unavailable(f"fetching {url[:100]!r} answered HTTP {fetched.status}", url=url[:200],
                          status=fetched.status)
    if fetched.truncated:
        raise PayloadTooLarge(f"the image at {url[:100]!r} is larger than the {limit}-byte limit", limit=limit)
    image = store.check(fetched.content, limit)
    await store.write_file(ctx.settings, image)
    async with ctx.transaction() as session:
        return _saved(await store.save(session, ctx.caller, image, fetched.url), alt)


@tool(group="images", title="Upload an image", scope="write", idempotent=True, transaction="phases",
      route=Route("POST", "/images/upload", status=201))
async def upload_image(ctx: Context, content: Binary, alt: Alt = "") -> SavedImage:
    """Store an image in your store; its markdown embeds it in a note.

    Args:
        content: PNG, JPEG, GIF, WebP or AVIF.
        alt: Alt text for the markdown.
    """
    image = store.check(content, ctx.settings.fable_image_max_bytes)
    await store.write_file(ctx.settings, image)
    async with ctx.transaction() as session:
        return _saved(await store.save(session, ctx.caller, image, None), alt)


@tool(group="images", title="Get an image", scope="read", transaction="phases",
      route=Route("GET", "/images/{image_id}"))
async def get_image(ctx: Context, image_id: ImageId) -> Blob:
    """One of your images, or one in a note shared with you, as the image."""
    async with ctx.reading() as session:
        row = await store.load(session, ctx.caller, image_id)
    content = await store.read_bytes(ctx.settings, row)
    return Blob(content=content, content_type=row.content_type, headers=_SERVED)
