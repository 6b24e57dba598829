"""Result models of the assistant's tools."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ConversationDetail", "ConversationPage", "ConversationSummary", "DeletedConversations", "MessageView",
           "ModelInfo", "ModelList", "RagScope"]

ConversationType = Literal["chat", "journal", "mcp"]


class _View(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class DeletedConversations(BaseModel):
    ids: list[int] = Field(description="The conversations deleted.")
    deleted: int


class ConversationSummary(_View):
    id: int
    title: str
    conversation_type: ConversationType
    rag_project_id: int | None = Field(
        None, description="Retrieval scope: null = notes outside projects, -1 = all notes, else a project id.")
    model: str | None = None
    created_at: datetime
    updated_at: datetime


class MessageView(_View):
    id: int
    role: Literal["user", "assistant"]
    content: str
    status: Literal["done", "generating", "stopped", "error", "interrupted"]
    error: str | None = Field(None, description="Why the answer failed or was cut off (error, interrupted).")
    tool_events: list[dict[str, Any]] | None = None
    context: dict[str, Any] | None = None
    created_at: datetime


class ConversationDetail(ConversationSummary):
    rag_scope_label: str
    summary: str | None = Field(None, description="The assistant's memory of older messages.")
    messages: list[MessageView]
    more_messages: bool = Field(False, description="True when older messages were left out.")


class ConversationPage(_View):
    items: list[ConversationSummary]
    next_cursor: str | None = None


class RagScope(_View):
    conversation_id: int
    rag_project_id: int | None
    label: str


class ModelInfo(_View):
    name: str
    size: int | None = None
    modified_at: str = ""


class ModelList(_View):
    provider: str
    chat_model: str | None
    embed_model: str | None
    items: list[ModelInfo]
