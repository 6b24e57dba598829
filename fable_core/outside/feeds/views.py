"""What the feed tools answer: compact models, no nulls (absent fields are left out)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints

from fable_core.tools.results import absent_when_none

__all__ = ["Category", "FeedId", "FeedInfo", "FeedItemView", "FeedItemsPage", "FeedList", "FeedName",
           "FeedSearchHit", "FeedSearchResults", "ItemId", "MarkedRead", "RefreshResult", "RefreshedFeed",
           "SavedItem"]

FeedId = Annotated[int, Field(ge=1, le=2**31 - 1)]
ItemId = Annotated[int, Field(ge=1, le=2**63 - 1)]
FeedName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
Category = Annotated[str, StringConstraints(strip_whitespace=True, max_length=100)]


def _empty(value: object) -> bool:
    return not value


class FeedInfo(BaseModel):
    id: int
    name: str
    url: str
    category: str = Field("", exclude_if=_empty)
    site_url: str | None = absent_when_none()
    items: int = Field(0, description="Items stored (the newest 100 are kept).")
    unread: int = 0
    last_success_at: datetime | None = absent_when_none()
    last_error: str | None = absent_when_none("Why the last refresh failed; it is retried later.")
    next_fetch_at: datetime | None = absent_when_none()


class FeedList(BaseModel):
    feeds: list[FeedInfo]
    next_cursor: str | None = absent_when_none()


class RefreshedFeed(BaseModel):
    id: int
    name: str
    status: Literal["updated", "unchanged", "failed"]
    new: int = Field(0, exclude_if=_empty)
    error: str | None = absent_when_none()


class RefreshResult(BaseModel):
    new_items: int
    feeds: list[RefreshedFeed]


class FeedItemView(BaseModel):
    id: int
    feed_id: int
    feed: str = Field(description="The feed's name.")
    title: str
    link: str | None = absent_when_none()
    published: datetime
    author: str | None = absent_when_none()
    snippet: str = Field("", exclude_if=_empty)
    text: str | None = absent_when_none("The item's whole text (full=true).")
    read: bool = False
    note_id: int | None = absent_when_none("The note it was saved as.")


class FeedItemsPage(BaseModel):
    items: list[FeedItemView]
    next_cursor: str | None = absent_when_none()


class MarkedRead(BaseModel):
    changed: int


class SavedItem(BaseModel):
    item_id: int
    note_id: int
    title: str
    created: bool = Field(description="False when the item had been saved before: that note is returned.")


class FeedSearchHit(BaseModel):
    id: int
    title: str
    link: str | None = absent_when_none()
    feed: str
    published: datetime
    snippet: str = Field("", exclude_if=_empty)


class FeedSearchResults(BaseModel):
    query: str
    mode: Literal["keyword", "hybrid"]
    keyword_only: str | None = absent_when_none(
        "Why meaning was not searched though an embedding model is set up (keyword matches only).")
    items: list[FeedSearchHit]
