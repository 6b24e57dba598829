"""The mail an account receives: a link to verify its address, a link to reset its password.

Both are sent beside the answer (:meth:`~fable_core.admin.mailer.Mailer.later`), and quietly not
at all when there is no mail server, no public URL or nothing to send: whoever asked gets the
same answer either way. Their links are built on the public URL only
(:func:`fable_core.admin.instance.public_url`), never on a request's Host.
"""

from __future__ import annotations

from fable_core.admin import instance
from fable_core.admin.mailer import Mailer
from fable_core.errors import Unavailable
from fable_core.identity import accounts

__all__ = ["reset_later", "verification_later"]


def verification_later(mailer: Mailer, user_id: int) -> None:
    """A verification link for the account's unverified address, when there is one."""
    mailer.later(lambda: _send_verification(mailer, user_id), "email verification mail")


async def _send_verification(mailer: Mailer, user_id: int) -> None:
    if not await mailer.configured():
        return
    async with mailer.db.transaction() as session:
        url, _ = await instance.public_url(session, mailer.settings)
        user = await accounts.get_user(session, user_id)
        if url is None:
            return
        token = await accounts.request_email_verification(session, user)
    if token is not None and user.email:
        await mailer.send(
            user.email, "Confirm your email address for Fable",
            f"To confirm that {user.email} belongs to the Fable account {user.username!r}, open "
            f"this link within two days:\n{url}/verify-email?token={token}\n\n"
            "Until then, password reset links are not sent to this address. If you did not "
            "give this address to Fable, ignore this message.\n",
        )


def reset_later(mailer: Mailer, login: str) -> None:
    """A reset link for the active account with this name or verified address, if any."""
    mailer.later(lambda: _send_reset(mailer, login), "password reset mail")


async def _send_reset(mailer: Mailer, login: str) -> None:
    async with mailer.db.transaction() as session:
        url, _ = await instance.public_url(session, mailer.settings)
        if url is None:
            raise Unavailable("no public URL: set FABLE_BASE_URL, or the public URL in admin settings")
        found = await accounts.request_password_reset(session, login)
    if found is None:
        return
    user, token = found
    await mailer.send(
        user.email or "", "Reset your Fable password",
        f"Someone asked to reset the password of {user.username!r} on Fable.\n\n"
        f"To choose a new password, open this link within an hour:\n{url}/reset-password?token={token}\n\n"
        "If it was not you, ignore this message: your password stays as it is.\n",
    )
