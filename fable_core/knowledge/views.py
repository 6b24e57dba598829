"""Result models of the knowledge tools: compact by default, bodies only where asked."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fable_core.knowledge.recurrence import next_occurrence
from fable_core.tools.results import absent_when_none

__all__ = [
    "BacklinkItem",
    "BacklinkPage",
    "NoteDetail",
    "NoteItem",
    "NoteKind",
    "NotePage",
    "NoteSummary",
    "SearchHit",
    "SearchResults",
    "TagCount",
    "TagList",
]



class _View(BaseModel):
    model_config = ConfigDict(from_attributes=True)


NoteKind = Literal["note", "task", "person", "place", "list"]


class NoteSummary(_View):
    """A note or task without its body."""

    id: int
    title: str
    kind: NoteKind
    tags: list[str]
    status: str | None = None
    priority: str | None = None
    due_date: date | None = None
    project_id: int | None = None
    milestone_id: int | None = None
    parent_id: int | None = None
    recurrence_rule: str | None = None
    next_due: date | None = absent_when_none("An open recurring task's next occurrence after its due date.")
    assignee: str | None = absent_when_none("Who the task is assigned to (username).")
    version: int
    updated_at: datetime
    owner: str | None = absent_when_none("Its owner, when someone shared it with you.")
    permission: Literal["viewer", "editor", "admin"] | None = absent_when_none(
        "What you may do with it, when it is shared with you: viewer reads, editor edits, admin also "
        "deletes and reshares.")

    @model_validator(mode="after")
    def _next_due(self) -> NoteSummary:
        if self.recurrence_rule and self.due_date and self.status in ("todo", "in_progress") and self.next_due is None:
            self.next_due = next_occurrence(self.recurrence_rule, self.due_date)
        return self


class NoteDetail(NoteSummary):
    """A note with (part of) its body; ``next_offset`` is set when more body remains."""

    body: str
    body_length: int
    offset: int = 0
    next_offset: int | None = None
    section: str | None = None
    sections: list[str] = Field(default_factory=list, description="Headings in the body, in order.")
    created_at: datetime
    completed_at: datetime | None = None
    fields: dict[str, Any] | None = absent_when_none(
        "A person's, place's or list's fields (see save_person, save_place, update_list).")
    inline_tags: list[str] | None = absent_when_none(
        "Its tags written as #tag in the body: they go when the text does.")


class NoteItem(NoteSummary):
    """A note in a list: its summary, with the start of its body as plain text when asked for."""

    preview: str | None = absent_when_none("The start of its body as plain text.")


class NotePage(_View):
    items: list[NoteItem]
    total: int | None = Field(None, description="How many notes match in all, on the first page (counted up to "
                              "1,000: 1000 means at least that many).")
    next_cursor: str | None = Field(None, description="Pass as `cursor` for the next page.")


class SearchHit(NoteSummary):
    snippet: str = Field(description="Matching excerpt as plain text; matches wrapped in ** **.")
    score: float


class SearchResults(_View):
    query: str
    mode: Literal["keyword", "hybrid"] = Field(
        description="'hybrid' when semantic and keyword results were fused; 'keyword' otherwise."
    )
    corrected: str | None = absent_when_none(
        "The query searched instead of `query`, its misspelt words corrected; absent when none was."
    )
    keyword_only: str | None = absent_when_none(
        "Why meaning was not searched though an embedding model is set up (keyword matches only)."
    )
    items: list[SearchHit]
    next_cursor: str | None = None


class TagCount(_View):
    tag: str
    count: int


class TagList(_View):
    items: list[TagCount]
    next_cursor: str | None = None


class BacklinkItem(_View):
    id: int
    title: str
    kind: NoteKind
    snippet: str = Field(description="The line of the linking note that holds the link, as plain text.")


class BacklinkPage(_View):
    items: list[BacklinkItem]
    next_cursor: str | None = None

