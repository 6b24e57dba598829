"""Admin endpoints under /api/admin for the instance: who may register, the public URL, the
mail server (with a test mail). Session-only and for admins, as everything under /api/admin
(:func:`fable_web.admin_api.admin_actor`); every change is audited by :mod:`fable_core.identity.users`.

The mail server's password is write-only: the views say whether one is set, never what it is.
When ``SMTP_HOST`` is configured on the server, that configuration wins: it is shown, and
changing the mail settings here is refused (409) with the reason.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, StringConstraints
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from fable_core.admin import instance
from fable_core.admin.audit import Actor, Target, audit
from fable_core.admin.instance import RegistrationMode
from fable_core.admin.mail_settings import MailServerChange, mail_server, server_view
from fable_core.errors import FableError, InvalidInput
from fable_core.identity import users as admin
from fable_core.identity.accounts import get_user
from fable_web.account_api import Email
from fable_web.admin_api import admin_actor
from fable_web.context import web
from fable_web.payload import parse_model, read_json_object
from fable_web.routing import ApiRoute, admin_doc

__all__ = ["routes"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RegistrationSetting(_Body):
    mode: RegistrationMode


class InstanceSettings(_Body):
    registration: RegistrationMode | None = None
    public_url: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)] | None = None


class TestMail(_Body):
    to: Email | None = None


async def _settings_json(request: Request) -> dict[str, Any]:
    w = web(request)
    async with w.fable.db.reading() as session:
        url, source = await instance.public_url(session, w.fable.settings)
        mode = await instance.registration_mode(session, w.fable.settings)
        mail = await mail_server(session, w.fable.settings)
    return {"registration": mode, "registration_default": w.fable.settings.registration_default,
            "public_url": url, "public_url_source": source, "mail": server_view(mail)}


async def get_settings(request: Request) -> Response:
    """The instance settings an admin may change here, and where the public URL comes from
    (``configured``: FABLE_BASE_URL, which wins; ``pinned``: set here or at the first
    registration; ``unset``)."""
    await admin_actor(request)
    return JSONResponse(await _settings_json(request))


async def set_settings(request: Request) -> Response:
    actor = await admin_actor(request)
    body = parse_model(InstanceSettings, await read_json_object(request))
    w = web(request)
    async with w.fable.db.transaction() as session:
        if body.public_url is not None:
            await admin.change_public_url(session, actor, w.fable.settings, body.public_url)
        if body.registration is not None:
            await admin.change_registration(session, actor, w.fable.settings, body.registration)
    return JSONResponse(await _settings_json(request))


async def get_registration(request: Request) -> Response:
    await admin_actor(request)
    w = web(request)
    async with w.fable.db.reading() as session:
        mode = await instance.registration_mode(session, w.fable.settings)
    return JSONResponse({"mode": mode, "open": mode == "open"})


async def set_registration(request: Request) -> Response:
    actor = await admin_actor(request)
    body = parse_model(RegistrationSetting, await read_json_object(request))
    w = web(request)
    async with w.fable.db.transaction() as session:
        mode = await admin.change_registration(session, actor, w.fable.settings, body.mode)
    return JSONResponse({"mode": mode, "open": mode == "open"})


async def get_mail(request: Request) -> Response:
    await admin_actor(request)
    return JSONResponse(server_view(await web(request).mailer.server()))


async def set_mail(request: Request) -> Response:
    """Store the mail server (``password`` left out keeps the stored one, null removes it)."""
    actor = await admin_actor(request)
    body = parse_model(MailServerChange, await read_json_object(request))
    w = web(request)
    async with w.fable.db.transaction() as session:
        await admin.set_mail_server(session, actor, w.fable.settings, body)
    return JSONResponse(server_view(await w.mailer.server()))


async def remove_mail(request: Request) -> Response:
    actor = await admin_actor(request)
    w = web(request)
    async with w.fable.db.transaction() as session:
        await admin.forget_mail_server(session, actor)
    return JSONResponse(server_view(await w.mailer.server()))


async def send_test_mail(request: Request) -> Response:
    """Send a test message now (to ``to``, else the admin's own address) and say whether the
    server took it; a failure is 503 with the server's answer. Either way it is audited."""
    actor = await admin_actor(request)
    body = parse_model(TestMail, await read_json_object(request))
    w = web(request)
    to = body.to or await _own_address(request, actor)
    await w.limiter.count("test_mail", str(actor.account_id))
    server = await w.mailer.server()
    failure: FableError | None = None
    try:
        await w.mailer.send(to, "Fable test message",
                            f"{actor.name} sent this from the admin page of Fable to check its mail settings.\n"
                            "It arrived, so the mail server works.\n", server=server)
    except FableError as e:
        failure = e
    async with w.fable.db.transaction() as session:
        await audit(session, actor, "mail.test", Target("mail", name=to), sent=failure is None,
                    **({"error": failure.message[:500]} if failure else {}))
    if failure is not None:
        raise failure
    assert server is not None
    return JSONResponse({"sent": True, "to": to, "server": f"{server.host}:{server.port}"})


async def _own_address(request: Request, actor: Actor) -> str:
    assert actor.account_id is not None
    async with web(request).fable.db.reading() as session:
        user = await get_user(session, actor.account_id)
    if not user.email:
        raise InvalidInput("your account has no email address: give one in `to`", field="to")
    return user.email


routes = [
    ApiRoute("/api/admin/settings", get_settings, methods=["GET"],
             doc=admin_doc("Instance settings: registration, public URL, mail")),
    ApiRoute("/api/admin/settings", set_settings, methods=["PATCH"],
             doc=admin_doc("Change instance settings", InstanceSettings)),
    ApiRoute("/api/admin/registration", get_registration, methods=["GET"],
             doc=admin_doc("Who may register: open, invite or closed")),
    ApiRoute("/api/admin/registration", set_registration, methods=["PUT"],
             doc=admin_doc("Change who may register", RegistrationSetting)),
    ApiRoute("/api/admin/mail", get_mail, methods=["GET"],
             doc=admin_doc("The mail server (never its password)")),
    ApiRoute("/api/admin/mail", set_mail, methods=["PUT"],
             doc=admin_doc("Set the mail server", MailServerChange)),
    ApiRoute("/api/admin/mail", remove_mail, methods=["DELETE"],
             doc=admin_doc("Forget the mail server set here")),
    ApiRoute("/api/admin/mail/test", send_test_mail, methods=["POST"],
             doc=admin_doc("Send a test mail", TestMail, body_required=False)),
]
