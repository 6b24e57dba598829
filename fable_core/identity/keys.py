"""The signed-in person's API keys as tools: list, create (the key is shown once, with
ready-to-paste MCP client configurations), revoke.

Creating and revoking a key is for the person in person (``credentials="session"``): a key
never mints or revokes keys. Both are audited in the transaction that makes them; revoking
announces it (:mod:`fable_core.identity.revocations`), so clients using the key are refused at
once here and within moments elsewhere.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints
from sqlalchemy import select

from fable_core.admin.audit import Actor, Target, audit
from fable_core.admin.instance import link_base
from fable_core.db.models import ApiKey
from fable_core.errors import NotFound
from fable_core.identity import accounts
from fable_core.identity.client_configs import http_config, stdio_config
from fable_core.identity.revocations import announce
from fable_core.identity.types import RowId
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import owned_by
from fable_core.tools.results import Deleted, absent_when_none
from fable_core.tools.toolsets import Toolsets, check_toolsets

__all__ = ["ApiKeyList", "ApiKeyView", "McpConfigs", "NewApiKey", "mcp_config"]

KeyName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100)]


class ApiKeyView(BaseModel):
    id: int
    name: str
    prefix: str = Field(description="Shown as fable_<prefix>_…; the key itself never again.")
    scope: Literal["read", "write"]
    created_at: datetime
    last_used_at: datetime | None = absent_when_none()
    toolsets: list[str] | None = absent_when_none("What its MCP client is offered; absent: the server's default.")

    @classmethod
    def of(cls, row: ApiKey) -> ApiKeyView:
        return cls(id=row.id, name=row.name, prefix=row.prefix, scope=row.scope,  # type: ignore[arg-type]
                   created_at=row.created_at, last_used_at=row.last_used_at, toolsets=row.toolsets)


class ApiKeyList(BaseModel):
    items: list[ApiKeyView]


class McpConfigs(BaseModel):
    http: dict[str, Any] = Field(description="For clients that speak streamable HTTP.")
    stdio: dict[str, Any] = Field(description="For stdio hosts (Claude Desktop), through `fable mcp --remote`.")


class NewApiKey(ApiKeyView):
    key: str = Field(description="The key: shown this once.")
    mcp_config: McpConfigs | None = absent_when_none("Ready-to-paste client configurations (when this Fable's "
                                                     "URL is known).")


def mcp_config(url: str, key: str) -> McpConfigs:
    """Client configurations for this key: HTTP (most clients) and stdio via the bridge."""
    return McpConfigs(http=http_config(f"{url}/mcp", key),
                      stdio=stdio_config(["mcp", "--remote", f"{url}/mcp"], {"FABLE_API_KEY": key}))


@tool(group="account", title="List your API keys", scope="read", agents=False, route=Route("GET", "/api-keys"))
async def list_api_keys(ctx: Context) -> ApiKeyList:
    """Your API keys, newest first (never the keys themselves)."""
    return ApiKeyList(items=[ApiKeyView.of(r) for r in await accounts.list_api_keys(ctx.session, ctx.user_id)])


@tool(group="account", title="Create an API key", scope="write", credentials="session", agents=False,
      route=Route("POST", "/api-keys", 201))
async def create_api_key(ctx: Context, name: KeyName, scope: Literal["read", "write"] = "write",
                         toolsets: Toolsets = None) -> NewApiKey:
    """Create an API key for MCP clients and scripts; it is shown once.

    Args:
        name: A name to recognise it by.
        scope: read: only the read-only tools; write: everything.
        toolsets: What its MCP client is offered (default, toolsets, tool names, all); absent: the server's default.
    """
    chosen = None if toolsets is None else check_toolsets(ctx.fable.registry, toolsets)
    row, key = await accounts.create_api_key(ctx.session, ctx.user_id, name, scope, chosen)
    await audit(ctx.session, Actor.of(ctx.caller), "apikey.create", Target("api_key", row.id, row.name),
                scope=row.scope)
    await ctx.session.refresh(row, ["created_at"])
    url = await link_base(ctx.session, ctx.settings, ctx.caller)
    return NewApiKey(**ApiKeyView.of(row).model_dump(), key=key, mcp_config=mcp_config(url, key) if url else None)


@tool(group="account", title="Choose an API key's toolsets", scope="write", idempotent=True, credentials="session",
      agents=False, route=Route("PATCH", "/api-keys/{key_id}"))
async def set_api_key_toolsets(ctx: Context, key_id: RowId, toolsets: Toolsets) -> ApiKeyView:
    """Choose what an API key's MCP client is offered; its next session gets it.

    Args:
        toolsets: default, toolsets, tool names or all; null: the server's default.
    """
    chosen = None if toolsets is None else check_toolsets(ctx.fable.registry, toolsets)
    row = await ctx.session.scalar(select(ApiKey).where(ApiKey.id == key_id, owned_by(ApiKey, ctx.caller)))
    if row is None:
        raise NotFound(f"API key {key_id} not found", key_id=key_id)
    row.toolsets = chosen
    await ctx.session.flush()
    await announce(ctx.session, f"api key {row.id} toolsets")
    await audit(ctx.session, Actor.of(ctx.caller), "apikey.toolsets", Target("api_key", row.id, row.name),
                toolsets=chosen)
    return ApiKeyView.of(row)


@tool(group="account", title="Revoke an API key", scope="write", destructive=True, idempotent=True,
      credentials="session", agents=False, route=Route("DELETE", "/api-keys/{key_id}"))
async def revoke_api_key(ctx: Context, key_id: RowId) -> Deleted:
    """Revoke one of your API keys: clients using it are refused at once."""
    row = await accounts.revoke_api_key(ctx.session, ctx.user_id, key_id)
    await audit(ctx.session, Actor.of(ctx.caller), "apikey.revoke", Target("api_key", row.id, row.name))
    return Deleted(id=row.id)
