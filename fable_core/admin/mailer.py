"""Outgoing mail (password resets, address verification, an admin's test mail) over SMTP.

The server is the ``SMTP_*`` environment or, without ``SMTP_HOST``, the one admins configured
(:mod:`fable_core.admin.mail_settings`), looked up for each message so that every replica sends
through the one configured last. TLS (STARTTLS or TLS from the start) verifies the server's
certificate against the system's trust store.

smtplib is blocking, so each message is sent from a worker thread, never on the event loop.
Account mail is sent *after* the answer (:meth:`Mailer.later`, a task of the runtime's that
its closing waits for): the answer to "mail me a reset link" must be the same, in content and
in time, whether the account exists and whether the SMTP server is up or slow; so nothing about
the delivery reaches the client. Failures are logged for the operator. One ``Mailer`` per
runtime (``Fable.mailer``), for every surface and tool.

Links in mail are built on the instance's public URL (:mod:`fable_core.admin.instance`), never on the
request's headers.
"""

from __future__ import annotations

import asyncio
import logging
import smtplib
import ssl
from collections.abc import Awaitable, Callable
from email.message import EmailMessage

from fable_core.admin.mail_settings import MailServer, mail_server
from fable_core.config import Settings
from fable_core.db.database import Database
from fable_core.errors import FableError, Unavailable
from fable_core.tools.runtime import Part

__all__ = ["MAILER", "Mailer"]

_log = logging.getLogger(__name__)
Compose = Callable[[], Awaitable[None]]
TIMEOUT = 15.0


class Mailer:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self._later: set[asyncio.Task[None]] = set()

    async def server(self) -> MailServer | None:
        """The mail server to send through now, or None."""
        async with self.db.reading() as session:
            return await mail_server(session, self.settings)

    async def configured(self) -> bool:
        return await self.server() is not None

    async def send(self, to: str, subject: str, body: str, *, server: MailServer | None = None) -> None:
        """Send one message; Unavailable saying why when it cannot be delivered."""
        server = server or await self.server()
        if server is None:
            raise Unavailable("no mail server is configured (SMTP_HOST, or the mail settings of the admin page)")
        login = server.login()
        message = EmailMessage()
        message["From"] = server.sender
        message["To"] = to
        message["Subject"] = subject
        message.set_content(body)
        try:
            await asyncio.to_thread(_deliver, server, login, message)
        except (OSError, smtplib.SMTPException) as e:
            raise Unavailable(f"could not send mail through {server.host}:{server.port}: {e}") from e

    def later(self, compose: Compose, what: str) -> None:
        """Run ``compose`` (which looks up, stores and sends) beside the answer, never in its
        way; a failure is logged, never answered."""

        async def run() -> None:
            try:
                await compose()
            except FableError as e:
                _log.warning("%s not sent: %s", what, e.message)
            except Exception:  # noqa: BLE001 - the client has its answer; the operator gets the log
                _log.exception("%s failed", what)

        task = asyncio.get_running_loop().create_task(run(), name=f"fable-mail: {what}")
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    async def close(self) -> None:
        """Wait for the mail being sent (each send gives up after :data:`TIMEOUT` seconds)."""
        while self._later:
            await asyncio.gather(*self._later, return_exceptions=True)


def _deliver(server: MailServer, login: tuple[str, str] | None, message: EmailMessage) -> None:
    context = ssl.create_default_context()
    smtp = (smtplib.SMTP_SSL(server.host, server.port, timeout=TIMEOUT, context=context) if server.tls == "tls"
            else smtplib.SMTP(server.host, server.port, timeout=TIMEOUT))
    with smtp:
        if server.tls == "starttls":
            smtp.starttls(context=context)
        if login is not None:
            smtp.login(*login)
        smtp.send_message(message)


MAILER: Part[Mailer] = Part("mailer")
"""The runtime's mailer (the frame installs it: ``Fable.mailer``)."""

