"""Outgoing mail (password resets) over SMTP, configured by the ``SMTP_*`` settings.

smtplib is blocking, so each message is sent from a worker thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
import smtplib
from email.message import EmailMessage

from fable_core.config import Settings
from fable_core.errors import Unavailable

__all__ = ["Mailer"]


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

    def _deliver(self, message: EmailMessage) -> None:
        s = self.settings
        assert s.smtp_host is not None
        with smtplib.SMTP(s.smtp_host, s.smtp_port, timeout=15) as smtp:
            if s.smtp_starttls:
                smtp.starttls()
            if s.smtp_username:
                smtp.login(s.smtp_username, s.smtp_password or "")
            smtp.send_message(message)
