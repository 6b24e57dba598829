"""The instance's settings as an admin changes them, as tools: who may register and the public
URL (:mod:`fable_core.admin.instance`), with the mail server's view (:mod:`fable_core.admin.mail`).

For admins in person only (``admin=True, credentials="session"``); each change is checked again
in its transaction and audited by :mod:`fable_core.identity.users`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints

from fable_core.admin import instance
from fable_core.admin.audit import Actor
from fable_core.admin.instance import RegistrationMode
from fable_core.admin.mail_settings import MailServerView, mail_server
from fable_core.tools import Context, Route, tool

__all__ = ["InstanceSettings"]

PublicUrlText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)]


class InstanceSettings(BaseModel):
    registration: RegistrationMode
    registration_default: RegistrationMode = Field(description="What applies until an admin chooses.")
    public_url: str | None = Field(description="Null: unset, and mail that needs a link is not sent.")
    public_url_source: Literal["configured", "pinned", "unset"] = Field(
        description="configured: FABLE_BASE_URL, which wins; pinned: set here or at the first registration.")
    mail: MailServerView


async def _settings(ctx: Context) -> InstanceSettings:
    url, source = await instance.public_url(ctx.session, ctx.settings)
    mode = await instance.registration_mode(ctx.session, ctx.settings)
    mail = await mail_server(ctx.session, ctx.settings)
    return InstanceSettings(registration=mode, registration_default=ctx.settings.registration_default,
                            public_url=url, public_url_source=source, mail=MailServerView.of(mail))


@tool(group="admin", title="Show the instance settings", scope="read", admin=True, credentials="session",
      agents=False, route=Route("GET", "/admin/settings"))
async def get_instance_settings(ctx: Context) -> InstanceSettings:
    """Admin: who may register, the public URL and where it comes from, the mail server."""
    return await _settings(ctx)


@tool(group="admin", title="Change the instance settings", scope="write", admin=True, credentials="session",
      agents=False, idempotent=True, route=Route("PATCH", "/admin/settings"))
async def update_instance_settings(ctx: Context, registration: RegistrationMode | None = None,
                                   public_url: PublicUrlText | None = None) -> InstanceSettings:
    """Admin: change who may register and the public URL (links in mail use it).

    Args:
        registration: open, invite or closed.
        public_url: Like https://fable.example.com (FABLE_BASE_URL wins when set).
    """
    actor = Actor.of(ctx.caller)
    if public_url is not None:
        await instance.change_public_url(ctx.session, actor, ctx.settings, public_url)
    if registration is not None:
        await instance.change_registration(ctx.session, actor, ctx.settings, registration)
    return await _settings(ctx)


