"""Result models of the browsing tools: compact, nothing sent as null."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from fable_core.knowledge.views import NoteKind
from fable_core.tools.results import absent_when_none

__all__ = ["Graph", "GraphNode", "LinkSuggestion", "LinkSuggestions", "TagNode", "TagTree", "TitleMatch",
           "TitleMatches"]


class TitleMatch(BaseModel):
    id: int
    title: str
    kind: NoteKind
    match: Literal["exact", "prefix", "word", "similar"] = Field(description="How the title matched.")


class TitleMatches(BaseModel):
    items: list[TitleMatch]


class TagNode(BaseModel):
    tag: str = Field(description="The full tag ('work/acme').")
    count: int = Field(description="Notes tagged with it or a tag under it.")
    children: list[TagNode] | None = absent_when_none()


class TagTree(BaseModel):
    items: list[TagNode] = Field(description="The top-level tags, A-Z, each with the tags under it.")
    truncated: bool | None = absent_when_none("True when there were more tags than the tree holds.")


class GraphNode(BaseModel):
    id: str = Field(description="'n<id>' a note, 'p<id>' a project, 't:<tag>' a tag.")
    label: str
    kind: Literal["note", "task", "person", "place", "list", "tag", "project"]


class Graph(BaseModel):
    nodes: list[GraphNode]
    links: list[list[str]] = Field(description="[from, to]: a note's link, tag or project; a tag's parent.")
    truncated: bool | None = absent_when_none("True when more notes matched than the limit: the newest are shown.")


class LinkSuggestion(BaseModel):
    id: int
    title: str
    kind: NoteKind
    reason: Literal["mention", "close"] = Field(
        description="mention: the body names it without a link; close: it is about something close.")
    mention: str | None = absent_when_none("The words naming it, as a title key (lower case, no punctuation).")


class LinkSuggestions(BaseModel):
    items: list[LinkSuggestion]
    mode: Literal["semantic", "keyword"] = Field(
        description="How close notes were found: by embeddings, or by shared words (no embedding model).")
    next_cursor: str | None = None
