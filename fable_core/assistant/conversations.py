"""Conversations with the assistant: loading them for their owner, and their tools (list, read,
rename, delete one or several, retrieval scope, project search)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints
from sqlalchemy import delete, exists, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from fable_core.assistant.parts import ASSISTANT
from fable_core.assistant.views import (
    ConversationDetail,
    ConversationPage,
    ConversationSummary,
    DeletedConversations,
    MessageView,
)
from fable_core.db.models import Conversation, Message, Project
from fable_core.errors import InvalidInput, NotFound
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import owned_by, reach_of, readable
from fable_core.tools.caller import Caller
from fable_core.tools.paging import NewestFirst
from fable_core.tools.results import Deleted, RowId

__all__ = ["ConvTitle", "ConversationId", "ScopeId", "check_conversation", "check_scope", "load_conversation",
           "scope_label"]

_PAGES = NewestFirst("conversations", Conversation.id, Conversation.updated_at)


async def load_conversation(session: AsyncSession, caller: Caller, conversation_id: int, *,
                           for_update: bool = False) -> Conversation:
    """The caller's conversation, or NotFound (also for other people's)."""
    stmt = select(Conversation).where(Conversation.id == conversation_id, owned_by(Conversation, caller))
    if for_update:
        stmt = stmt.with_for_update()
    found = (await session.execute(stmt)).scalar_one_or_none()
    if found is None:
        raise NotFound(f"conversation {conversation_id} not found", conversation_id=conversation_id)
    return found


async def check_conversation(conn: AsyncSession | AsyncConnection, caller: Caller, conversation_id: int) -> None:
    """NotFound unless the caller owns the conversation (one query, no ORM object)."""
    found = await conn.scalar(select(Conversation.id).where(Conversation.id == conversation_id,
                                                           owned_by(Conversation, caller)))
    if found is None:
        raise NotFound(f"conversation {conversation_id} not found", conversation_id=conversation_id)


# --- tools ------------------------------------------------------------------------------------


ConversationId = Annotated[int, Field(ge=1, le=2**31 - 1)]
ConvTitle = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
ScopeId = Annotated[int | None, Field(ge=-1, le=2**31 - 1, description=(
    "Notes drawn on: omit for those outside projects, -1 for all, else a project id."))]


@tool(group="chat", title="Start a conversation", scope="write", route=Route("POST", "/chat/conversations", status=201))
async def create_conversation(
    ctx: Context,
    title: ConvTitle | None = None,
    conversation_type: Literal["chat", "journal", "mcp"] = "chat",
    rag_project_id: ScopeId = None,
) -> ConversationSummary:
    """Start a conversation with the assistant (send_message to write in it)."""
    await check_scope(ctx.session, ctx.caller, rag_project_id)
    values: dict[str, Any] = {"user_id": ctx.user_id, "conversation_type": conversation_type,
                              "rag_project_id": rag_project_id}
    if title:
        values["title"] = title
    row = (await ctx.session.execute(insert(Conversation).values(**values).returning(Conversation))).scalar_one()
    return ConversationSummary.model_validate(row)


@tool(group="chat", title="List conversations", scope="read", route=Route("GET", "/chat/conversations"))
async def list_conversations(
    ctx: Context,
    conversation_type: Literal["chat", "journal", "mcp"] | None = None,
    query: Annotated[str | None, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)] = None,
    limit: Annotated[int, Field(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Field(max_length=512)] = None,
) -> ConversationPage:
    """The caller's conversations with the assistant, most recently active first.

    Args:
        query: Words in the title or messages.
    """
    stmt = select(Conversation).where(owned_by(Conversation, ctx.caller))
    if conversation_type:
        stmt = stmt.where(Conversation.conversation_type == conversation_type)
    for word in (query or "").split()[:8]:
        pattern = f"%{_escape_like(word)}%"
        stmt = stmt.where(Conversation.title.ilike(pattern, escape="\\") | exists().where(
            Message.conversation_id == Conversation.id, Message.content.ilike(pattern, escape="\\")))
    rows, next_cursor = _PAGES.page(list(await ctx.session.scalars(_PAGES.query(stmt, cursor, limit))), limit)
    return ConversationPage(items=[ConversationSummary.model_validate(r) for r in rows], next_cursor=next_cursor)


@tool(group="chat", title="Read a conversation", scope="read",
      route=Route("GET", "/chat/conversations/{conversation_id}"))
async def get_conversation(
    ctx: Context,
    conversation_id: ConversationId,
    limit: Annotated[int, Field(ge=1, le=1000)] = 200,
) -> ConversationDetail:
    """Read a conversation: its scope, memory summary and newest messages (oldest first)."""
    conversation = await load_conversation(ctx.session, ctx.caller, conversation_id)
    rows = list((await ctx.session.execute(
        select(Message).where(Message.conversation_id == conversation_id)
        .order_by(Message.id.desc()).limit(limit + 1))).scalars())
    return ConversationDetail(
        **ConversationSummary.model_validate(conversation).model_dump(),
        rag_scope_label=await scope_label(ctx.session, ctx.caller, conversation.rag_project_id),
        summary=conversation.summary,
        messages=[MessageView.model_validate(m) for m in reversed(rows[:limit])],
        more_messages=len(rows) > limit,
    )


@tool(group="chat", title="Rename a conversation", scope="write", idempotent=True,
      route=Route("PATCH", "/chat/conversations/{conversation_id}"))
async def rename_conversation(ctx: Context, conversation_id: ConversationId, title: ConvTitle) -> ConversationSummary:
    """Give a conversation a new title."""
    conversation = await load_conversation(ctx.session, ctx.caller, conversation_id, for_update=True)
    conversation.title = title
    await ctx.session.flush()
    await ctx.session.refresh(conversation, ["updated_at"])
    return ConversationSummary.model_validate(conversation)


@tool(group="chat", title="Delete a conversation", scope="write", destructive=True,
      route=Route("DELETE", "/chat/conversations/{conversation_id}"))
async def delete_conversation(ctx: Context, conversation_id: ConversationId) -> Deleted:
    """Delete a conversation and all its messages (a running answer is stopped)."""
    await load_conversation(ctx.session, ctx.caller, conversation_id)
    if ctx.runtime is not None and (assistant := ctx.runtime.part(ASSISTANT)) is not None:
        assistant.forget(conversation_id)
    await ctx.session.execute(delete(Conversation).where(Conversation.id == conversation_id))
    return Deleted(id=conversation_id)


@tool(group="chat", title="Delete conversations", scope="write", destructive=True, assistant=False,
      route=Route("POST", "/chat/conversations/delete"))
async def delete_conversations(
    ctx: Context,
    conversation_ids: Annotated[list[RowId], Field(min_length=1, max_length=200)],
) -> DeletedConversations:
    """Delete several conversations and their messages, all or none (running answers are stopped)."""
    ids = list(dict.fromkeys(conversation_ids))
    found = set(await ctx.session.scalars(select(Conversation.id).where(
        Conversation.id.in_(ids), owned_by(Conversation, ctx.caller)).with_for_update()))
    if missing := [i for i in ids if i not in found]:
        raise NotFound(f"conversations {missing!r} not found; nothing was deleted", conversation_ids=missing)
    if ctx.runtime is not None and (assistant := ctx.runtime.part(ASSISTANT)) is not None:
        for conversation_id in ids:
            assistant.forget(conversation_id)
    await ctx.session.execute(delete(Conversation).where(Conversation.id.in_(ids)))
    return DeletedConversations(ids=ids, deleted=len(ids))


def _escape_like(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


async def scope_label(session: AsyncSession, caller: Caller, rag_project_id: int | None) -> str:
    """How the UI's scope chip names a scope."""
    if rag_project_id is None:
        return "Notes outside projects"
    if rag_project_id == -1:
        return "All notes"
    title = await session.scalar(select(Project.title).where(
        Project.id == rag_project_id, readable(Project, await reach_of(session, caller))))
    return f"Project: {title}" if title else f"Project {rag_project_id}"


async def check_scope(session: AsyncSession, caller: Caller, rag_project_id: int | None) -> None:
    """InvalidInput or NotFound unless ``rag_project_id`` is a scope the caller may choose."""
    if rag_project_id in (None, -1):
        return
    if rag_project_id == 0:
        raise InvalidInput("rag_project_id must be null, -1 or a project id", field="rag_project_id")
    found = await session.scalar(select(Project.id).where(
        Project.id == rag_project_id, readable(Project, await reach_of(session, caller))))
    if found is None:
        raise NotFound(f"project {rag_project_id} not found", project_id=rag_project_id)
