"""Model management on the LLM server (admins only): list, pull, delete, warm up.

They touch no database: ``transaction="phases"`` with no phase, so a pull that takes minutes
holds no connection.

``pull_model`` here waits for the pull and returns its last status; the web surface streams the
NDJSON progress itself (``fable_web.chat``) from the same provider method.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, StringConstraints

from fable_core.assistant.providers import NoProvider, Provider
from fable_core.assistant.views import ModelInfo, ModelList
from fable_core.caller import Caller
from fable_core.errors import Forbidden
from fable_core.tools import Context, Route, tool

__all__ = ["provider_for_admin"]

ModelName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200,
                                             pattern=r"^[\w.\-/:]+$")]


class ModelAction(BaseModel):
    name: str
    status: str
    progress: list[dict[str, Any]] = []


def provider_for_admin(caller: Caller, services: Mapping[str, Any]) -> Provider:
    """The installed provider, for admins; Forbidden for anyone else."""
    if not caller.is_admin:
        raise Forbidden("managing models is for admins", role=caller.role)
    provider = services.get("llm")
    return provider if isinstance(provider, Provider) else NoProvider()


@tool(title="List models", scope="read", transaction="phases", route=Route("GET", "/models"))
async def list_models(ctx: Context) -> ModelList:
    """List the models installed on the LLM server (admins only)."""
    provider = provider_for_admin(ctx.caller, ctx.services)
    models = await provider.list_models()
    return ModelList(provider=provider.name, chat_model=provider.model, embed_model=provider.embed_model,
                     items=[ModelInfo(**m) for m in models])


@tool(title="Pull a model", scope="write", idempotent=True, open_world=True, transaction="phases",
      route=Route("POST", "/models/pull"))
async def pull_model(ctx: Context, name: ModelName) -> ModelAction:
    """Download a model onto the LLM server and wait until it is there (admins only)."""
    provider = provider_for_admin(ctx.caller, ctx.services)
    progress = [p async for p in provider.pull(name)]
    return ModelAction(name=name, status=str(progress[-1].get("status", "")) if progress else "",
                       progress=progress[-5:])


@tool(title="Delete a model", scope="write", destructive=True, transaction="phases", route=Route("DELETE", "/models"))
async def delete_model(ctx: Context, name: ModelName) -> ModelAction:
    """Remove a model from the LLM server (admins only)."""
    await provider_for_admin(ctx.caller, ctx.services).delete(name)
    return ModelAction(name=name, status="deleted")


@tool(title="Warm up a model", scope="write", idempotent=True, transaction="phases",
      route=Route("POST", "/models/warm"))
async def warm_model(ctx: Context, name: ModelName | None = None) -> ModelAction:
    """Load a model into memory so the next answer starts fast (admins only; default: the chat model)."""
    provider = provider_for_admin(ctx.caller, ctx.services)
    await provider.warm(name)
    return ModelAction(name=name or provider.model or "", status="loaded")
