"""Which notes the assistant draws on in a conversation (its RAG scope): one project's, all of
them, or those outside any project."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from sqlalchemy import update

from fable_core.assistant.conversations import ConversationId, check_scope, load_conversation, scope_label
from fable_core.assistant.views import RagScope
from fable_core.db.models import Conversation
from fable_core.errors import InvalidInput
from fable_core.tools import Context, Route, tool


@tool(group="chat", title="Set the assistant's note scope", scope="write", idempotent=True,
      route=Route("PUT", "/chat/conversations/{conversation_id}/scope"))
async def set_rag_scope(
    ctx: Context,
    project_id: Annotated[int | None, Field(ge=1, le=2**31 - 1)] = None,
    all_notes: bool = False,
    conversation_id: ConversationId | None = None,
) -> RagScope:
    """Choose the notes the assistant draws on in a conversation.

    A project's (`project_id`), all (`all_notes`), or, with neither, those outside any project.

    Args:
        conversation_id: Default inside the assistant: the current one.
    """
    target = conversation_id or ctx.caller.conversation_id
    if target is None:
        raise InvalidInput("set_rag_scope needs a conversation_id", field="conversation_id")
    if ctx.caller.project_id is not None and ctx.caller.surface == "assistant":
        raise InvalidInput("a workspace conversation is fixed to its project", field="project_id")
    if project_id is not None and all_notes:
        raise InvalidInput("pass project_id or all_notes, not both", field="all_notes")
    scope = -1 if all_notes else project_id
    await check_scope(ctx.session, ctx.caller, scope)
    await load_conversation(ctx.session, ctx.caller, target, for_update=True)
    await ctx.session.execute(update(Conversation).where(Conversation.id == target).values(rag_project_id=scope))
    return RagScope(conversation_id=target, rag_project_id=scope,
                    label=await scope_label(ctx.session, ctx.caller, scope))
