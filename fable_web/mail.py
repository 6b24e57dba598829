"""Outgoing mail (password resets, address verification) over SMTP, configured by ``SMTP_*``.

smtplib is blocking, so each message is sent from a worker thread, never on the event loop.
Account mail is sent *after* the response (:meth:`Mailer.later`): the answer to "mail me a
reset link" must be the same, in content and in time, whether the account exists and whether
the SMTP server is up or slow; so nothing about the delivery reaches the client. Failures are
logged for the operator.

Links in mail are built on the instance's public URL (:mod:`fable_core.instance`), never on the
request's headers.
"""

from __future__ import annotations

import asyncio
import logging
import smtplib
from collections.abc import Awaitable, Callable
from email.message import EmailMessage

from starlette.background import BackgroundTask

from fable_core.config import Settings
from fable_core.errors import FableError, Unavailable

__all__ = ["Mailer"]

_log = logging.getLogger(__name__)
Compose = Callable[[], Awaitable[None]]


class Mailer:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @property
    def configured(self) -> bool:
        return bool(self.settings.smtp_host)

    async def send(self, to: str, subject: str, body: str) -> None:
        if not self.configured:
            raise Unavailable("no SMTP server is configured (SMTP_HOST)")
        message = EmailMessage()
        message["From"] = self.settings.smtp_from
        message["To"] = to
        message["Subject"] = subject
        message.set_content(body)
        try:
            await asyncio.to_thread(self._deliver, message)
        except (OSError, smtplib.SMTPException) as e:
            raise Unavailable(f"could not send mail through {self.settings.smtp_host}: {e}") from e

    @staticmethod
    def later(compose: Compose, what: str) -> BackgroundTask:
        """Run ``compose`` (which looks up, stores and sends) once the response has gone out;
        a failure is logged, never answered."""

        async def run() -> None:
            try:
                await compose()
            except FableError as e:
                _log.warning("%s not sent: %s", what, e.message)
            except Exception:  # noqa: BLE001 - the client has its answer; the operator gets the log
                _log.exception("%s failed", what)

        return BackgroundTask(run)

    def _deliver(self, message: EmailMessage) -> None:
        s = self.settings
        assert s.smtp_host is not None
        with smtplib.SMTP(s.smtp_host, s.smtp_port, timeout=15) as smtp:
            if s.smtp_starttls:
                smtp.starttls()
            if s.smtp_username:
                smtp.login(s.smtp_username, s.smtp_password or "")
            smtp.send_message(message)
