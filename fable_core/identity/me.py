"""The signed-in person's own account as tools: who am I, change my password, my email address
and its verification mail.

Changing a credential is for the person in person (``credentials="session"``): a leaked API key
or OAuth token must not change the password or the address reset links go to. Passwords are
checked and hashed with no connection held (``transaction="phases"``,
:mod:`fable_core.identity.passwords`), and every password-checking call counts in the rate
limits, per client address and per account (:mod:`fable_core.infra.rate_limits`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field
from sqlalchemy import select

from fable_core.config import Settings
from fable_core.db.models import LoginSession
from fable_core.errors import Forbidden
from fable_core.identity import accounts
from fable_core.identity.views import UserView
from fable_core.infra.rate_limits import count_attempt
from fable_core.tools import Context, Route, tool
from fable_core.tools.access import of_user
from fable_core.tools.caller import Scope
from fable_core.tools.clock import TIMEZONE, user_timezone
from fable_core.tools.preferences import is_set
from fable_core.tools.results import absent_when_none

__all__ = ["Me", "count_password_attempt", "require_local_auth"]


class Me(BaseModel):
    user: UserView
    auth: Literal["session", "api_key", "local"] = Field(description="How this call signed in.")
    scope: Scope
    csrf_token: str | None = absent_when_none("The session's token for X-CSRF-Token (signed-in browsers only).")
    timezone: str = Field(description="Your time zone (the timezone setting): what today is on every page.")
    timezone_chosen: bool = Field(description="Whether you chose it; else it is the default, UTC, and the web "
                                              "UI takes your browser's.")


def require_local_auth(settings: Settings) -> None:
    """Forbidden when password sign-in and registration are turned off (LOCAL_AUTH_ENABLED)."""
    if not settings.local_auth_enabled:
        other = f": sign in with {settings.oidc_name}" if settings.oidc_issuer else ""
        raise Forbidden(f"password sign-in and registration are turned off on this instance "
                        f"(LOCAL_AUTH_ENABLED=false){other}", reason="local_auth_disabled")


async def count_password_attempt(ctx: Context) -> None:
    """One password-checking attempt, from the caller's address and on their account."""
    if ctx.caller.address is not None:
        await count_attempt(ctx.fable.db, "password", ctx.caller.address)
    await count_attempt(ctx.fable.db, "password_account", str(ctx.user_id))


@tool(group="account", title="Who am I", scope="read", agents=False, route=Route("GET", "/auth/me"))
async def get_me(ctx: Context) -> Me:
    """Your account, how you signed in, your session's CSRF token and your time zone."""
    user = await accounts.get_user(ctx.session, ctx.user_id)
    csrf = None
    if ctx.caller.session_id is not None:
        csrf = await ctx.session.scalar(select(LoginSession.csrf).where(
            LoginSession.id == ctx.caller.session_id, of_user(LoginSession, ctx.user_id)))
    auth: Literal["session", "api_key", "local"] = ("api_key" if ctx.caller.credential in ("key", "oauth")
                                                    else ctx.caller.credential)  # type: ignore[assignment]
    return Me(user=UserView.of(user), auth=auth, scope=ctx.caller.scope, csrf_token=csrf,
              timezone=await user_timezone(ctx.session, ctx.caller),
              timezone_chosen=await is_set(ctx.session, ctx.caller, TIMEZONE))


