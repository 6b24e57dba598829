"""The mail server Fable sends through: the ``SMTP_*`` environment when ``SMTP_HOST`` is set
(it wins, so an operator's configuration cannot be changed from the web), else the one an admin
configured in the UI, kept in ``instance_settings`` with its password sealed
(:mod:`fable_core.infra.sealed`): no API returns it, and its views say only whether there is one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator
from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.admin import instance
from fable_core.admin.audit import Actor, Target, audit, require_admin
from fable_core.config import Settings
from fable_core.db.models import InstanceSetting
from fable_core.errors import Conflict, Unavailable
from fable_core.infra.sealed import Unreadable, seal, unseal

__all__ = ["Email", "MailServer", "MailServerChange", "MailServerView", "SmtpHost", "SmtpPassword", "SmtpPort",
           "SmtpUsername", "TlsMode", "change_mail_server", "forget_mail_server", "mail_server", "remove_mail_server",
           "save_mail_server"]

Email = Annotated[str, StringConstraints(strip_whitespace=True, max_length=320, pattern=r"^[^@\s]+@[^@\s]+$")]
"""An email address as an argument: one @, no blanks, at most 320 characters."""


TlsMode = Literal["starttls", "tls", "none"]
SmtpHost = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=253,
                                            pattern=r"^([A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])$")]
SmtpPort = Annotated[int, Field(ge=1, le=65535)]
SmtpUsername = Annotated[str, StringConstraints(strip_whitespace=True, max_length=200)]
SmtpPassword = Annotated[str, StringConstraints(max_length=500)]
_KEY = "smtp"
_PURPOSE = "smtp password"


@dataclass(frozen=True, slots=True)
class MailServer:
    """Where and how to send: ``tls`` is ``starttls`` (upgrade a plain connection), ``tls``
    (TLS from the first byte, usually port 465) or ``none``."""

    host: str
    port: int
    tls: TlsMode
    username: str | None
    password: str | None
    sender: str
    source: Literal["environment", "instance"]
    password_unreadable: bool = False

    def login(self) -> tuple[str, str] | None:
        if self.password_unreadable:
            raise Unavailable("the stored SMTP password cannot be read (the secret key changed since it was "
                              "saved): enter it again in the mail settings")
        return (self.username, self.password or "") if self.username else None


class MailServerChange(BaseModel):
    """An admin's mail server. ``password`` left out keeps the stored one; null or "" removes it."""

    model_config = ConfigDict(extra="forbid")

    host: SmtpHost
    port: SmtpPort = 587
    tls: TlsMode = "starttls"
    username: SmtpUsername | None = None
    password: SmtpPassword | None = None
    sender: Email = Field(description="The From address of Fable's mail.")

    @model_validator(mode="after")
    def _password_needs_a_username(self) -> MailServerChange:
        if self.password and not self.username:
            raise ValueError("a password needs a username")
        return self


async def mail_server(session: AsyncSession, settings: Settings) -> MailServer | None:
    """The server to send through now, or None when there is none."""
    if settings.smtp_host:
        return MailServer(settings.smtp_host, settings.smtp_port, "starttls" if settings.smtp_starttls else "none",
                          settings.smtp_username, settings.smtp_password, settings.smtp_from, "environment")
    stored = await instance.value(session, _KEY)
    if not isinstance(stored, dict):
        return None
    password, unreadable = None, False
    if stored.get("password"):
        try:
            password = unseal(stored["password"], settings.secret_key(), _PURPOSE)
        except Unreadable:
            unreadable = True
    return MailServer(stored["host"], stored["port"], stored["tls"], stored.get("username"), password,
                      stored["sender"], "instance", unreadable)


def _absent() -> Any:
    return Field(None, exclude_if=lambda value: value is None)  # unset: only the source is told


class MailServerView(BaseModel):
    """What admins see of the mail server: where its configuration comes from and its fields,
    never the password (only whether one is set)."""

    source: Literal["environment", "instance", "unset"] = Field(
        description="environment: SMTP_HOST and the other SMTP_* variables, which win; instance: set here.")
    host: str | None = _absent()
    port: int | None = _absent()
    tls: TlsMode | None = _absent()
    username: str | None = _absent()
    sender: str | None = _absent()
    password_set: bool | None = _absent()
    password_unreadable: bool | None = _absent()

    @classmethod
    def of(cls, server: MailServer | None) -> MailServerView:
        if server is None:
            return cls(source="unset")
        return cls(source=server.source, host=server.host, port=server.port, tls=server.tls, username=server.username,
                   sender=server.sender, password_set=bool(server.password) or server.password_unreadable,
                   password_unreadable=server.password_unreadable)


async def save_mail_server(session: AsyncSession, settings: Settings, change: MailServerChange) -> dict[str, Any]:
    """Store an admin's mail server; returns what changed, for the audit log (no password:
    only whether it was set, kept or removed)."""
    if settings.smtp_host:
        raise Conflict("mail is configured on the server by SMTP_HOST and the other SMTP_* variables, which "
                       "win over these settings: change them there", field="host")
    before = await instance.value(session, _KEY)
    before = before if isinstance(before, dict) else {}
    sealed = before.get("password")
    if "password" in change.model_fields_set:
        sealed = seal(change.password, settings.secret_key(), _PURPOSE) if change.password else None
    new = {"host": change.host, "port": change.port, "tls": change.tls, "username": change.username or None,
           "password": sealed, "sender": change.sender}
    await instance.store(session, _KEY, new)
    changed: dict[str, Any] = {k: v for k, v in new.items() if k != "password" and before.get(k) != v}
    if "password" in change.model_fields_set:
        changed["password"] = "set" if sealed else "removed"
    return changed


async def remove_mail_server(session: AsyncSession) -> bool:
    """Forget the admin's mail server; whether there was one."""
    gone = await session.execute(delete(InstanceSetting).where(InstanceSetting.key == _KEY)
                                 .returning(InstanceSetting.key))
    return gone.first() is not None


async def change_mail_server(session: AsyncSession, actor: Actor, settings: Settings, change: MailServerChange) -> None:
    await require_admin(session, actor)
    changed = await save_mail_server(session, settings, change)
    if changed:
        await audit(session, actor, "instance.mail", Target("instance"), changed=changed)


async def forget_mail_server(session: AsyncSession, actor: Actor) -> None:
    await require_admin(session, actor)
    if await remove_mail_server(session):
        await audit(session, actor, "instance.mail", Target("instance"), changed={"removed": True})
