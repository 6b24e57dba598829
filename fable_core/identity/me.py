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

from fable_core.access import of_user
from fable_core.config import Settings
from fable_core.db.models import LoginSession
from fable_core.errors import Forbidden, InvalidInput, Unavailable
from fable_core.identity import accounts
from fable_core.identity.account_mail import verification_later
from fable_core.identity.passwords import hashed
from fable_core.identity.types import Email, Password
from fable_core.identity.views import Message, UserResult, UserView
from fable_core.infra.rate_limits import count_attempt
from fable_core.knowledge.views import absent_when_none
from fable_core.tools import Context, Route, tool
from fable_core.tools.caller import Scope

__all__ = ["Me", "count_password_attempt", "require_local_auth"]


class Me(BaseModel):
    user: UserView
    auth: Literal["session", "api_key", "local"] = Field(description="How this call signed in.")
    scope: Scope
    csrf_token: str | None = absent_when_none("The session's token for X-CSRF-Token (signed-in browsers only).")


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
    """Your account, how you signed in, and your session's CSRF token."""
    user = await accounts.get_user(ctx.session, ctx.user_id)
    csrf = None
    if ctx.caller.session_id is not None:
        csrf = await ctx.session.scalar(select(LoginSession.csrf).where(
            LoginSession.id == ctx.caller.session_id, of_user(LoginSession, ctx.user_id)))
    auth: Literal["session", "api_key", "local"] = ("api_key" if ctx.caller.credential in ("key", "oauth")
                                                    else ctx.caller.credential)  # type: ignore[assignment]
    return Me(user=UserView.of(user), auth=auth, scope=ctx.caller.scope, csrf_token=csrf)


@tool(group="account", title="Change your password", scope="write", credentials="session", agents=False,
      transaction="phases", route=Route("POST", "/auth/password"))
async def change_password(ctx: Context, current_password: Password, new_password: Password) -> UserResult:
    """Change your password; every other session of yours ends."""
    require_local_auth(ctx.settings)
    await count_password_attempt(ctx)
    new = await hashed(new_password)  # both checks before the transaction opens
    checked = await accounts.checked_password(ctx.fable.db, ctx.user_id, current_password)
    async with ctx.transaction() as session:
        user = await accounts.change_password(session, ctx.user_id, checked, new, keep_session=ctx.caller.session_id)
        await session.refresh(user, ["created_at"])
    return UserResult(user=UserView.of(user))


@tool(group="account", title="Change your email address", scope="write", credentials="session", agents=False,
      transaction="phases", route=Route("PUT", "/auth/email"))
async def change_email(ctx: Context, email: Email | None, password: Password | None = None) -> UserResult:
    """Change your email address (it starts unverified and is mailed a link), or remove it.

    Args:
        email: The new address, or null for none.
        password: Your current password; an account without one (OIDC sign-in only) leaves it out
            and must have signed in within 10 minutes.
    """
    await count_password_attempt(ctx)
    checked = None if password is None else await accounts.checked_password(ctx.fable.db, ctx.user_id, password)
    async with ctx.transaction() as session:
        user = await accounts.change_email(session, ctx.user_id, checked, email, login_session=ctx.caller.session_id)
        await session.refresh(user, ["created_at"])
    verification_later(ctx.fable.mailer, user.id)
    return UserResult(user=UserView.of(user))


@tool(group="account", title="Mail a new verification link", scope="write", credentials="session", agents=False,
      transaction="phases", route=Route("POST", "/auth/email/verification", 202))
async def send_email_verification(ctx: Context) -> Message:
    """Mail your unverified address a new verification link."""
    async with ctx.reading() as session:
        user = await accounts.get_user(session, ctx.user_id)
    if not user.email or user.email_verified_at is not None:
        raise InvalidInput("the account has no unverified email address", field="email")
    if not await ctx.fable.mailer.configured():
        raise Unavailable("this instance cannot send mail; ask its admin")
    await count_attempt(ctx.fable.db, "verification_mail", str(ctx.user_id))
    verification_later(ctx.fable.mailer, user.id)
    return Message(message=f"a verification link was sent to {user.email}")
