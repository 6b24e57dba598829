"""Invitations as an admin makes them, as tools: pending ones, a new link (shown once), revoke.

For admins in person only (``admin=True, credentials="session"``), audited by
:mod:`fable_core.identity.users`. The link is built on this Fable's URL for the person asking
(:func:`fable_core.admin.instance.link_base`: the public URL, else the one they reached it at).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated

from pydantic import BaseModel, Field

from fable_core.admin.audit import Actor
from fable_core.admin.instance import link_base
from fable_core.identity import invitations
from fable_core.identity import users as admin
from fable_core.identity.types import Email, RowId
from fable_core.tools import Context, Route, tool
from fable_core.tools.results import absent_when_none

__all__ = ["InvitationList", "InvitationView", "NewInvitation", "RevokedInvitation"]

_DEFAULT_HOURS = int(invitations.DEFAULT_TTL.total_seconds() // 3600)
_MAX_HOURS = int(invitations.MAX_TTL.total_seconds() // 3600)


class InvitationView(BaseModel):
    id: int
    email: str | None = Field(description="Null: anyone may register with it.")
    created_by: str | None = Field(description="The admin who made it (null: an operator, or a deleted account).")
    created_at: datetime
    expires_at: datetime


class InvitationList(BaseModel):
    items: list[InvitationView]


class NewInvitation(InvitationView):
    token: str = Field(description="Shown this once.")
    url: str | None = absent_when_none("The registration link to send (when this Fable's URL is known).")


class RevokedInvitation(BaseModel):
    id: int
    revoked: bool = True


@tool(group="admin", title="List pending invitations", scope="read", admin=True, credentials="session",
      agents=False, route=Route("GET", "/admin/invitations"))
async def list_invitations(ctx: Context) -> InvitationList:
    """Admin: unused, unexpired invitations, soonest to expire first."""
    return InvitationList(items=[InvitationView.model_validate(i)
                                 for i in await invitations.pending_invitations(ctx.session)])


@tool(group="admin", title="Create an invitation", scope="write", admin=True, credentials="session", agents=False,
      route=Route("POST", "/admin/invitations", 201))
async def create_invitation(ctx: Context, email: Email | None = None,
                            expires_in_hours: Annotated[int, Field(ge=1, le=_MAX_HOURS)] = _DEFAULT_HOURS,
                            ) -> NewInvitation:
    """Admin: a registration link, shown once, that admits one account before it expires.

    Args:
        email: Only this address may register with it (and it is verified).
        expires_in_hours: How long the link works.
    """
    actor = Actor.of(ctx.caller)
    row, token = await admin.invite(ctx.session, actor, ctx.settings, email, timedelta(hours=expires_in_hours))
    base = await link_base(ctx.session, ctx.settings, ctx.caller)
    view = invitations.invitation_view(row, actor.name)
    return NewInvitation(**view, token=token, url=f"{base}/register?invitation={token}" if base else None)


@tool(group="admin", title="Revoke an invitation", scope="write", admin=True, credentials="session", agents=False,
      destructive=True, idempotent=True, route=Route("DELETE", "/admin/invitations/{invitation_id}"))
async def revoke_invitation(ctx: Context, invitation_id: RowId) -> RevokedInvitation:
    """Admin: revoke a pending invitation; its link stops working at once."""
    row = await admin.revoke(ctx.session, Actor.of(ctx.caller), invitation_id)
    return RevokedInvitation(id=row.id)
