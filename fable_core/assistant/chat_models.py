"""Which model a conversation answers with: the models a user may pick from, and the pick.

A conversation's ``model`` wins over the user's ``default_model`` setting, which wins over the
server's chat model (:mod:`fable_core.assistant.chat`). Listing asks the model server, so it
holds no connection while it waits; a server that cannot list its models offers its chat model.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from fable_core.assistant.conversations import ConversationId, load_conversation
from fable_core.assistant.models import installed_provider
from fable_core.errors import FableError
from fable_core.people.preferences.personal import DEFAULT_MODEL
from fable_core.people.preferences.types import ModelName
from fable_core.tools import Context, Route, tool
from fable_core.tools.preferences import read_settings

__all__: list[str] = []


class ChatModels(BaseModel):
    default: str | None = Field(description="What a conversation with no model of its own uses.")
    items: list[str]


class ConversationModel(BaseModel):
    conversation_id: int
    model: str | None = Field(description="null: the default model.")


@tool(group="chat", assistant=False, title="List chat models", scope="read", transaction="phases", needs=("llm",),
      route=Route("GET", "/chat/models"))
async def list_chat_models(ctx: Context) -> ChatModels:
    """The models a conversation can answer with, and the default one."""
    async with ctx.reading() as session:
        (chosen,) = await read_settings(session, ctx.caller, DEFAULT_MODEL)
    provider = installed_provider(ctx.runtime)
    try:
        names = [m["name"] for m in await provider.list_models() if m.get("name")]
    except FableError:
        names = []
    default = chosen or provider.model
    names = sorted({*names, *([default] if default else [])})
    return ChatModels(default=default, items=names)


@tool(group="chat", assistant=False, title="Choose a conversation's model", scope="write", idempotent=True,
      route=Route("PUT", "/chat/conversations/{conversation_id}/model"))
async def set_conversation_model(ctx: Context, conversation_id: ConversationId,
                                 model: ModelName | None = None) -> ConversationModel:
    """Make a conversation answer with `model` from now on; omit it for the default model."""
    conversation = await load_conversation(ctx.session, ctx.caller, conversation_id, for_update=True)
    conversation.model = model
    return ConversationModel(conversation_id=conversation_id, model=model)
