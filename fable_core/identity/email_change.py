"""A signed-in person's email address: changing it (with their password when they have one) and
mailing a new verification link, sent after the answer."""

from __future__ import annotations

from fable_core.admin.mailer import MAILER
from fable_core.errors import InvalidInput, Unavailable
from fable_core.identity import accounts
from fable_core.identity.account_mail import verification_later
from fable_core.identity.me import count_password_attempt
from fable_core.identity.types import Email, Password
from fable_core.identity.views import Message, UserResult, UserView
from fable_core.infra.rate_limits import count_attempt
from fable_core.tools import Context, Route, tool


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
    verification_later(ctx.fable.required(MAILER), user.id)
    return UserResult(user=UserView.of(user))


@tool(group="account", title="Mail a new verification link", scope="write", credentials="session", agents=False,
      transaction="phases", route=Route("POST", "/auth/email/verification", 202))
async def send_email_verification(ctx: Context) -> Message:
    """Mail your unverified address a new verification link."""
    async with ctx.reading() as session:
        user = await accounts.get_user(session, ctx.user_id)
    if not user.email or user.email_verified_at is not None:
        raise InvalidInput("the account has no unverified email address", field="email")
    if not await ctx.fable.required(MAILER).configured():
        raise Unavailable("this instance cannot send mail; ask its admin")
    await count_attempt(ctx.fable.db, "verification_mail", str(ctx.user_id))
    verification_later(ctx.fable.required(MAILER), user.id)
    return Message(message=f"a verification link was sent to {user.email}")
