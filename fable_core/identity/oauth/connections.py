"""OAuth connections as tools: a person's authorised clients (list, revoke) and the admin's
view of client registrations (list, disable).

They are for Settings and the CLI (``agents=False``): an agent connected through OAuth has no
business listing or ending other connections. Revoking a connection deletes its grant, and with
it every code and token issued under it; disabling a client stops its tokens at once and
refuses it new ones. Each change is audited, and this process forgets the tokens it remembered
(:class:`~fable_core.identity.key_callers.KeyCallers`; other processes within two seconds).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, StringConstraints
from sqlalchemy import delete, func, select

from fable_core.admin.audit import Actor, Target, audit
from fable_core.db.models import OAuthClient, OAuthGrant
from fable_core.errors import NotFound
from fable_core.identity.key_callers import KEY_CALLERS
from fable_core.identity.revocations import announce
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import owned_by
from fable_core.tools.paging import Cursor, Limit, NewestFirst
from fable_core.tools.results import absent_when_none
from fable_core.tools.toolsets import Toolsets, check_toolsets

__all__ = ["Connection", "Connections", "OAuthClientPage", "OAuthClientView"]

_CLIENTS = NewestFirst("oauth-clients", OAuthClient.id, OAuthClient.created_at)

ClientId = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)]
ConnectionId = Annotated[int, Field(ge=1, le=2**31 - 1)]


class Connection(BaseModel):
    id: int
    client: str = Field(description="The client's name, as it registered itself.")
    client_id: str
    redirect_hosts: list[str] = Field(description="Where it sends people back to.")
    scope: Literal["read", "write"]
    created_at: datetime
    last_used_at: datetime | None = absent_when_none()
    toolsets: list[str] | None = absent_when_none("What it is offered over MCP; absent: the server's default.")

    @classmethod
    def of(cls, grant: OAuthGrant, client: OAuthClient) -> Connection:
        return cls(id=grant.id, client=client.client_name, client_id=client.client_id,
                   redirect_hosts=_hosts(client.redirect_uris), scope=grant.scope,  # type: ignore[arg-type]
                   created_at=grant.created_at, last_used_at=grant.last_used_at, toolsets=grant.toolsets)


class Connections(BaseModel):
    items: list[Connection]


class OAuthClientView(BaseModel):
    client_id: str
    name: str
    redirect_uris: list[str]
    created_at: datetime
    connections: int = Field(description="People who approved it.")
    disabled_at: datetime | None = absent_when_none()
    software: str | None = absent_when_none()


class OAuthClientPage(BaseModel):
    items: list[OAuthClientView]
    next_cursor: str | None = None


def _hosts(uris: list[str]) -> list[str]:
    return sorted({urlsplit(u).hostname or urlsplit(u).scheme for u in uris})


@tool(group="account", title="List my OAuth connections", scope="read", agents=False,
      route=Route("GET", "/oauth/connections"))
async def list_connections(ctx: Context) -> Connections:
    """The OAuth clients you authorised (MCP connectors): name, scope, last use."""
    rows = (await ctx.session.execute(
        select(OAuthGrant, OAuthClient).join(OAuthClient, OAuthClient.id == OAuthGrant.client_ref)
        .where(owned_by(OAuthGrant, ctx.caller)).order_by(OAuthGrant.created_at.desc(), OAuthGrant.id.desc())
        .limit(200))).all()
    return Connections(items=[Connection.of(g, c) for g, c in rows])


async def _own_connection(ctx: Context, connection_id: int) -> tuple[OAuthGrant, OAuthClient]:
    """The caller's connection and its client; NotFound for anyone else's."""
    row = (await ctx.session.execute(
        select(OAuthGrant, OAuthClient).join(OAuthClient, OAuthClient.id == OAuthGrant.client_ref)
        .where(OAuthGrant.id == connection_id, owned_by(OAuthGrant, ctx.caller)))).first()
    if row is None:
        raise NotFound(f"OAuth connection {connection_id} not found", connection_id=connection_id)
    return row[0], row[1]


@tool(group="account", title="Revoke an OAuth connection", scope="write", destructive=True, idempotent=False,
      agents=False,
      route=Route("DELETE", "/oauth/connections/{connection_id}"))
async def revoke_connection(ctx: Context, connection_id: ConnectionId) -> Connection:
    """End an OAuth connection: its tokens stop working; the client must ask you again."""
    grant, client = await _own_connection(ctx, connection_id)
    view = Connection.of(grant, client)
    await ctx.session.execute(delete(OAuthGrant).where(OAuthGrant.id == grant.id))
    await announce(ctx.session, "oauth connection")
    await audit(ctx.session, Actor.of(ctx.caller), "oauth.connection.revoke",
                Target("oauth_connection", grant.id, client.client_name[:100]), client_id=client.client_id)
    _forget(ctx)
    return view


@tool(group="account", title="Choose an OAuth connection's toolsets", scope="write", idempotent=True,
      credentials="session", agents=False, route=Route("PATCH", "/oauth/connections/{connection_id}"))
async def set_connection_toolsets(ctx: Context, connection_id: ConnectionId, toolsets: Toolsets) -> Connection:
    """Choose what an OAuth connection's MCP client is offered; its next session gets it.

    Args:
        toolsets: default, toolsets, tool names or all; null: the server's default.
    """
    chosen = None if toolsets is None else check_toolsets(ctx.fable.registry, toolsets)
    grant, client = await _own_connection(ctx, connection_id)
    grant.toolsets = chosen
    await ctx.session.flush()
    await announce(ctx.session, "oauth connection toolsets")
    await audit(ctx.session, Actor.of(ctx.caller), "oauth.connection.toolsets",
                Target("oauth_connection", grant.id, client.client_name[:100]), toolsets=chosen)
    _forget(ctx)
    return Connection.of(grant, client)


@tool(group="admin", title="List OAuth client registrations", scope="read", admin=True, credentials="session",
      agents=False,
      route=Route("GET", "/oauth/clients"))
async def list_oauth_clients(ctx: Context, limit: Limit = 50, cursor: Cursor = None) -> OAuthClientPage:
    """Admin: registered OAuth clients, newest first, with how many people approved each."""
    people = (select(func.count()).where(OAuthGrant.client_ref == OAuthClient.id)
              .correlate(OAuthClient).scalar_subquery())
    rows = (await ctx.session.execute(_CLIENTS.query(select(OAuthClient, people), cursor, limit))).all()
    kept, next_cursor = _CLIENTS.page(rows, limit, row=lambda r: r[0])
    return OAuthClientPage(items=[_client_view(c, n) for c, n in kept], next_cursor=next_cursor)


@tool(group="admin", title="Disable or enable an OAuth client", scope="write", admin=True, credentials="session",
      idempotent=True,
      agents=False,
      route=Route("POST", "/oauth/clients/disabled"))
async def disable_oauth_client(ctx: Context, client_id: ClientId, disabled: bool = True) -> OAuthClientView:
    """Admin: disable a client registration (its tokens stop working at once) or enable it again."""
    client = await ctx.session.scalar(select(OAuthClient).where(OAuthClient.client_id == client_id)
                                      .with_for_update())
    if client is None:
        raise NotFound(f"OAuth client {client_id!r} not found", client_id=client_id)
    if (client.disabled_at is not None) != disabled:
        client.disabled_at = datetime.now(UTC) if disabled else None
        await audit(ctx.session, Actor.of(ctx.caller), "oauth.client.disable" if disabled else "oauth.client.enable",
                    Target("oauth_client", client.id, client.client_name[:100]), client_id=client.client_id)
        await ctx.session.flush()
        await announce(ctx.session, "oauth client")
    _forget(ctx)
    people = await ctx.session.scalar(select(func.count()).where(OAuthGrant.client_ref == client.id))
    return _client_view(client, int(people or 0))


def _client_view(client: OAuthClient, people: int) -> OAuthClientView:
    return OAuthClientView(client_id=client.client_id, name=client.client_name,
                           redirect_uris=list(client.redirect_uris), created_at=client.created_at,
                           connections=people, disabled_at=client.disabled_at, software=client.software)


def _forget(ctx: Context) -> None:
    if ctx.runtime is not None and (keys := ctx.runtime.part(KEY_CALLERS)) is not None:
        keys.forget()
