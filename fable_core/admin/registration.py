"""Who may register on this instance (open, by invitation, or nobody), as admins see and change it;
each change is audited (:func:`fable_core.admin.instance.change_registration`)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from fable_core.admin import instance
from fable_core.admin.audit import Actor
from fable_core.admin.instance import RegistrationMode
from fable_core.tools import Context, Route, tool

__all__ = ["Registration"]

class Registration(BaseModel):
    mode: RegistrationMode
    open: bool = Field(description="Whether anyone may sign up now.")


@tool(group="admin", title="Show who may register", scope="read", admin=True, credentials="session",
      agents=False, route=Route("GET", "/admin/registration"))
async def get_registration(ctx: Context) -> Registration:
    """Admin: who may register: open, invite or closed."""
    mode = await instance.registration_mode(ctx.session, ctx.settings)
    return Registration(mode=mode, open=mode == "open")


@tool(group="admin", title="Change who may register", scope="write", admin=True, credentials="session",
      agents=False, idempotent=True, route=Route("PUT", "/admin/registration"))
async def set_registration(ctx: Context, mode: RegistrationMode) -> Registration:
    """Admin: change who may register (open, invite or closed)."""
    after = await instance.change_registration(ctx.session, Actor.of(ctx.caller), ctx.settings, mode)
    return Registration.model_validate({"mode": after, "open": after == "open"})
