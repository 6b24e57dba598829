"""``change_password``: a signed-in person changes their own password, proving the current one;
both are checked and hashed with no connection held, and their other sessions end."""

from __future__ import annotations

from fable_core.identity import accounts
from fable_core.identity.me import count_password_attempt, require_local_auth
from fable_core.identity.passwords import hashed
from fable_core.identity.types import Password
from fable_core.identity.views import UserResult, UserView
from fable_core.tools import Context, Route, tool


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
