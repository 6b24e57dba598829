"""Model management on the LLM server (admins only): list, pull, delete, warm up.

They touch no database: ``transaction="phases"`` with no phase, so a pull that takes minutes
holds no connection.

``pull_model`` is a streaming tool: each status line of the pull is progress (MCP progress, SSE
on REST's ``/models/pull/stream``), and the result is its last status.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, StringConstraints

from fable_core.assistant.parts import LLM
from fable_core.assistant.providers import NoProvider, Provider
from fable_core.assistant.views import ModelInfo, ModelList
from fable_core.tools import Context, Route, tool

if TYPE_CHECKING:
    from fable_core.tools.runtime import Runtime

__all__ = ["installed_provider"]

ModelName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200,
                                             pattern=r"^[\w.\-/:]+$")]


class ModelAction(BaseModel):
    name: str
    status: str
    progress: list[dict[str, Any]] = []


def installed_provider(fable: Runtime | None) -> Provider:
    """The installed provider, ungated: these tools are ``admin=True`` (the dispatcher refuses
    anyone else) and manage the server rather than ask it for an answer."""
    provider = fable.part(LLM) if fable is not None else None
    return provider if provider is not None else NoProvider()


@tool(group="models", assistant=False, title="List models", scope="read", transaction="phases", admin=True,
      needs=("llm",),
      route=Route("GET", "/models"))
async def list_models(ctx: Context) -> ModelList:
    """List the models installed on the LLM server."""
    provider = installed_provider(ctx.runtime)
    models = await provider.list_models()
    return ModelList(provider=provider.name, chat_model=provider.model, embed_model=provider.embed_model,
                     items=[ModelInfo(**m) for m in models])


@tool(group="models", assistant=False, title="Pull a model", scope="write", idempotent=True, open_world=True,
      stream=True, admin=True,
      needs=("llm",),
      route=Route("POST", "/models/pull"))
async def pull_model(ctx: Context, name: ModelName) -> ModelAction:
    """Download a model onto the LLM server and wait until it is there."""
    provider = installed_provider(ctx.runtime)
    last: list[dict[str, Any]] = []
    async for step in provider.pull(name):
        await ctx.progress("pull", step)
        last = [*last[-4:], step]
    return ModelAction(name=name, status=str(last[-1].get("status", "")) if last else "", progress=last)


@tool(group="models", assistant=False, title="Delete a model", scope="write", destructive=True, transaction="phases",
      admin=True,
      needs=("llm",), route=Route("DELETE", "/models"))
async def delete_model(ctx: Context, name: ModelName) -> ModelAction:
    """Remove a model from the LLM server."""
    await installed_provider(ctx.runtime).delete(name)
    return ModelAction(name=name, status="deleted")


@tool(group="models", assistant=False, title="Warm up a model", scope="write", idempotent=True, transaction="phases",
      admin=True,
      needs=("llm",),
      route=Route("POST", "/models/warm"))
async def warm_model(ctx: Context, name: ModelName | None = None) -> ModelAction:
    """Load a model (default: the chat model) into memory so the next answer starts fast."""
    provider = installed_provider(ctx.runtime)
    await provider.warm(name)
    return ModelAction(name=name or provider.model or "", status="loaded")
