"""The mail server as an admin sets it, as tools: show it (never its password), set it, forget
it, send a test message (:mod:`fable_core.admin.mail_settings` keeps it, :mod:`.mailer` sends).

For admins in person only (``admin=True, credentials="session"``); every change is audited by
:mod:`fable_core.identity.users`, and a test mail is audited whether or not the server took it.
When ``SMTP_HOST`` is configured on the server, that configuration wins: it is shown, and
changing the mail settings here is refused (409) with the reason.
"""

from __future__ import annotations

from pydantic import BaseModel, Field
from sqlalchemy import select

from fable_core.admin import mail_settings
from fable_core.admin.audit import Actor, Target, audit
from fable_core.admin.mail_settings import (
    Email,
    MailServer,
    MailServerChange,
    MailServerView,
    SmtpHost,
    SmtpPassword,
    SmtpPort,
    SmtpUsername,
    TlsMode,
    mail_server,
)
from fable_core.admin.mailer import MAILER
from fable_core.db.models import User
from fable_core.errors import FableError, InvalidInput
from fable_core.infra.rate_limits import count_attempt
from fable_core.tools import Context, Route, tool

__all__ = ["TestMailSent"]


class TestMailSent(BaseModel):
    sent: bool = True
    to: str
    server: str = Field(description="host:port it went through.")


@tool(group="admin", title="Show the mail server", scope="read", admin=True, credentials="session", agents=False,
      transaction="phases", route=Route("GET", "/admin/mail"))
async def get_mail_server(ctx: Context) -> MailServerView:
    """Admin: the mail server Fable sends through and where it is configured (never its password)."""
    return MailServerView.of(await ctx.fable.required(MAILER).server())


@tool(group="admin", title="Set the mail server", scope="write", admin=True, credentials="session", agents=False,
      idempotent=True, route=Route("PUT", "/admin/mail"))
async def set_mail_server(ctx: Context, host: SmtpHost, sender: Email, port: SmtpPort = 587,
                          tls: TlsMode = "starttls", username: SmtpUsername | None = None,
                          password: SmtpPassword | None = None) -> MailServerView:
    """Admin: store the mail server (refused while SMTP_HOST configures it on the server).

    Args:
        host: The SMTP server's name or address.
        sender: The From address of Fable's mail.
        tls: starttls, tls (usually port 465) or none.
        password: Left out or null: the stored one stays; "" removes it.
    """
    if password and not username:
        raise InvalidInput("a password needs a username", field="password")
    given: dict[str, object] = {"host": host, "port": port, "tls": tls, "username": username, "sender": sender}
    if password is not None:  # "" removes the stored one
        given["password"] = password or None
    change = MailServerChange.model_validate(given)
    await mail_settings.change_mail_server(ctx.session, Actor.of(ctx.caller), ctx.settings, change)
    return MailServerView.of(await _server(ctx))


@tool(group="admin", title="Forget the mail server", scope="write", admin=True, credentials="session",
      agents=False, destructive=True, idempotent=True, route=Route("DELETE", "/admin/mail"))
async def remove_mail_server(ctx: Context) -> MailServerView:
    """Admin: forget the mail server set here (Fable sends no mail until one is set again)."""
    await mail_settings.forget_mail_server(ctx.session, Actor.of(ctx.caller))
    return MailServerView.of(await _server(ctx))


async def _server(ctx: Context) -> MailServer | None:
    """The server as this call's transaction sees it (the change it just made included)."""
    return await mail_server(ctx.session, ctx.settings)


@tool(group="admin", title="Send a test mail", scope="write", admin=True, credentials="session", agents=False,
      transaction="phases", route=Route("POST", "/admin/mail/test"))
async def send_test_mail(ctx: Context, to: Email | None = None) -> TestMailSent:
    """Admin: send a test message now (to `to`, else your own address) and say whether the
    server took it; a failure is 503 with the server's answer. Either way it is audited."""
    actor = Actor.of(ctx.caller)
    to = to or await _own_address(ctx)
    await count_attempt(ctx.fable.db, "test_mail", actor.name if actor.account_id is None else str(actor.account_id))
    mailer = ctx.fable.required(MAILER)
    server = await mailer.server()
    failure: FableError | None = None
    try:
        await mailer.send(to, "Fable test message",
                          f"{actor.name} sent this from the admin page of Fable to check its mail settings.\n"
                          "It arrived, so the mail server works.\n", server=server)
    except FableError as e:
        failure = e
    async with ctx.transaction() as session:
        await audit(session, actor, "mail.test", Target("mail", name=to), sent=failure is None,
                    **({"error": failure.message[:500]} if failure else {}))
    if failure is not None:
        raise failure
    assert server is not None
    return TestMailSent(to=to, server=f"{server.host}:{server.port}")


async def _own_address(ctx: Context) -> str:
    if ctx.caller.operator:
        raise InvalidInput("the operator has no email address: give one in `to`", field="to")
    async with ctx.reading() as session:
        address = await session.scalar(select(User.email).where(User.id == ctx.caller.user_id))
    if not address:
        raise InvalidInput("your account has no email address: give one in `to`", field="to")
    return address
