"""Fable's OAuth 2.1 authorization server over HTTP, for MCP clients that connect by URL.

The wire endpoints (no session, open to any origin: a browser-based client calls them):

- ``GET /.well-known/oauth-authorization-server``: RFC 8414 metadata;
- ``POST /oauth/register``: RFC 7591 dynamic registration (JSON), rate limited per address;
- ``GET /oauth/authorize``: fetches the client's metadata document when its ``client_id`` is a
  URL (:mod:`fable_core.identity.oauth.documents`), checks the request, then sends the person to the consent page
  (``/oauth/consent``, in the web UI, which signs them in first) or, when they approved this
  client before for as much and its redirect URI is ``https``, straight back with a code. A bad
  client or redirect URI is shown on the consent page, never redirected to;
- ``POST /oauth/token``: authorization_code and refresh_token grants (form-encoded);
- ``POST /oauth/revoke``: RFC 7009 revocation.

And the consent page's API, for a signed-in session only (an API key or OAuth token can never
approve a client): ``GET /api/oauth/authorization`` describes the request (client name,
redirect host, scopes), ``POST`` approves or denies it (CSRF-checked like every session POST)
and answers with the URL to send the browser to. The rules are in :mod:`fable_core.identity.oauth`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated
from urllib.parse import parse_qsl, urlencode, urlsplit

from authlib.oauth2.rfc6749.errors import InvalidRequestError, OAuth2Error
from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route, request_response
from starlette.types import ASGIApp

from fable_core.admin.audit import Actor
from fable_core.errors import Forbidden, InvalidInput, RateLimited
from fable_core.identity.oauth import clients, documents, server
from fable_web.context import WebContext, web
from fable_web.errors import UnsupportedMediaType
from fable_web.payload import parse_model, read_json_object
from fable_web.rest import model_response
from fable_web.routing import ApiRoute, Doc

__all__ = ["routes", "wire_routes"]

METADATA_PATH = "/.well-known/oauth-authorization-server"
CONSENT_PAGE = "/oauth/consent"
_MAX_FORM = 16_384
_NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
Param = Annotated[str, StringConstraints(max_length=2000)]


class AuthorizationParams(BaseModel):
    """The authorization request's parameters, as the client sent them to /oauth/authorize."""

    model_config = ConfigDict(extra="ignore")
    client_id: Param
    redirect_uri: Param
    response_type: Param = ""
    code_challenge: Param = ""
    code_challenge_method: Param = ""
    state: Param | None = None
    scope: Param | None = None
    resource: Param | None = None


class ConsentDecision(AuthorizationParams):
    model_config = ConfigDict(extra="forbid")
    approve: bool = Field(description="true: approve the client; false: deny it.")


class ConsentClient(BaseModel):
    name: str
    client_id: str
    uri: str | None = Field(None, exclude_if=lambda v: v is None, description="The client's home page, if it gave one.")


class ConsentView(BaseModel):
    """What the consent page shows: who asks, for what, and where the answer goes."""

    client: ConsentClient
    redirect_host: str
    redirect_uri: str
    scopes: list[str]
    resource: str | None
    user: str = Field(description="Who is signed in, and would approve.")
    remembered: bool = Field(description="Approved before: approving again changes nothing.")


class ConsentRedirect(BaseModel):
    redirect: str = Field(description="Where to send the browser: the client's redirect URI, with a code or an error.")


def _oauth_error(error: OAuth2Error, status: int | None = None) -> JSONResponse:
    body = dict(error.get_body())
    headers = dict(_NO_STORE)
    code = status or (401 if error.error == "invalid_client" else error.status_code or 400)
    if code == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="fable", error="invalid_client"'
    return JSONResponse(body, status_code=code, headers=headers)


async def _form(request: Request) -> dict[str, str]:
    """A form-encoded body as a dict; InvalidRequestError for another type, a repeated
    parameter (RFC 6749 §3.2) or a body over 16 KB."""
    ctype = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if ctype != "application/x-www-form-urlencoded":
        raise InvalidRequestError(description="send the body as application/x-www-form-urlencoded")
    body = await request.body()
    if len(body) > _MAX_FORM:
        raise InvalidRequestError(description=f"the body exceeds {_MAX_FORM} bytes")
    try:
        pairs = parse_qsl(body.decode(), keep_blank_values=True, max_num_fields=50)
    except (UnicodeDecodeError, ValueError) as e:
        raise InvalidRequestError(description="the body is not a valid form") from e
    form = dict(pairs)
    if len(form) != len(pairs):
        raise InvalidRequestError(description="a parameter is repeated")
    return form


def _wire(handler: Callable[[Request], Awaitable[Response]], methods: tuple[str, ...]) -> ASGIApp:
    """An endpoint any origin may call (no cookies are read), with a 405 for other methods."""

    async def endpoint(request: Request) -> Response:
        if request.method not in methods:
            return JSONResponse({"error": "invalid_request", "error_description": f"use {', '.join(methods)}"},
                                status_code=405, headers={"Allow": ", ".join(methods)})
        return await handler(request)

    return CORSMiddleware(request_response(endpoint), allow_origins=["*"], allow_methods=list(methods),
                          allow_headers=["authorization", "content-type", "mcp-protocol-version"], max_age=600)


async def metadata(request: Request) -> Response:
    w = web(request)
    async with w.fable.db.reading() as session:
        public = await server.issuer(session, w.fable.settings)
    return JSONResponse(server.server_metadata(public, registration=w.fable.settings.fable_oauth_registration))


async def register(request: Request) -> Response:
    w = web(request)
    settings = w.fable.settings
    async with w.fable.db.reading() as session:
        await server.issuer(session, settings)  # 503 while OAuth is off or has no public URL
    if not settings.fable_oauth_registration:
        raise Forbidden("client registration is turned off on this Fable (FABLE_OAUTH_REGISTRATION=false)",
                        reason="registration_closed")
    ip = w.limiter.ip(request)
    try:
        await w.limiter.hit(request, "oauth_register")
    except RateLimited:
        await clients.refuse_registration(w.fable.db, ip, "rate_limited")
        raise
    try:
        metadata = await read_json_object(request)
        async with w.fable.db.transaction() as session:
            row = await clients.register_client(session, metadata, ip)
    except (InvalidInput, UnsupportedMediaType) as e:
        error = str(e.details.get("oauth_error") or "invalid_client_metadata")
        return JSONResponse({"error": error, "error_description": e.message}, status_code=400, headers=_NO_STORE)
    return JSONResponse(clients.registration_view(row), status_code=201, headers=_NO_STORE)


async def authorize(request: Request) -> Response:
    """Check the request; a remembered approval gets its code at once, anything else the consent page."""
    w = web(request)
    params = dict(request.query_params.items())
    consent = RedirectResponse(f"{CONSENT_PAGE}?{urlencode(params)}", status_code=302)
    info = await w.auth.current(request)
    try:
        await _resolve(request, params.get("client_id"))
    except InvalidInput:
        return consent  # the page shows why
    async with w.fable.db.transaction() as session:
        try:
            checked = await server.check_authorization(session, w.fable.settings, params)
        except server.Redirected as e:
            return RedirectResponse(e.location, status_code=302)
        except InvalidInput:
            return consent  # the page shows what is wrong; nothing goes to an unchecked URI
        grant = None
        if info is not None and server.proves_client(checked):
            grant = await server.remembered(session, info.user_id, checked)
        if grant is None:
            return consent
        location = await server.issue_code(session, w.fable.settings, grant, checked)
    return RedirectResponse(location, status_code=302)


async def token(request: Request) -> Response:
    w = web(request)
    try:
        form = await _form(request)
    except OAuth2Error as e:
        return _oauth_error(e)
    async with w.fable.db.transaction() as session:
        await server.issuer(session, w.fable.settings)
        outcome = await server.token_response(session, w.fable.settings, form)
    if isinstance(outcome, server.Refusal):
        w.auth.forget_keys()  # a refusal may have revoked a family
        return _oauth_error(outcome.error)
    return JSONResponse(outcome, headers=_NO_STORE)


async def revoke(request: Request) -> Response:
    w = web(request)
    try:
        form = await _form(request)
    except OAuth2Error as e:
        return _oauth_error(e)
    async with w.fable.db.transaction() as session:
        await server.issuer(session, w.fable.settings)
        refused = await server.revoke_token(session, form)
    if refused is not None:
        return _oauth_error(refused.error)
    w.auth.forget_keys()
    return Response(status_code=200, headers=_NO_STORE)


def _redirect_host(uri: str) -> str:
    parts = urlsplit(uri)
    return parts.netloc or parts.scheme


async def describe(request: Request) -> Response:
    """What the consent page shows: who asks, for what, and where the answer goes."""
    w = web(request)
    info = await w.auth.session(request)
    params = parse_model(AuthorizationParams, dict(request.query_params))
    await _resolve(request, params.client_id)
    async with w.fable.db.reading() as session:
        checked = await _checked(session, w, params)
        remembered = await server.remembered(session, info.user_id, checked) is not None
    return model_response(ConsentView(
        client=ConsentClient(name=checked.client.client_name, client_id=checked.client.client_id,
                             uri=checked.client.client_uri or None),
        redirect_host=_redirect_host(checked.redirect_uri), redirect_uri=checked.redirect_uri,
        scopes=server.scope_text(checked.scope).split(), resource=checked.resource, user=info.username,
        remembered=remembered))


async def decide(request: Request) -> Response:
    """Approve or deny; the answer is where to send the browser (the client's redirect URI)."""
    w = web(request)
    info = await w.auth.session(request)  # with the CSRF check: another site cannot approve for you
    body = parse_model(ConsentDecision, await read_json_object(request))
    await _resolve(request, body.client_id)
    async with w.fable.db.transaction() as session:
        checked = await _checked(session, w, body)
        if not body.approve:
            return model_response(ConsentRedirect(redirect=server.redirect_uri_for(
                checked, error="access_denied", error_description="the person denied the request")))
        grant = await server.approve(session, Actor(info.user_id, info.username, "web"), checked)
        location = await server.issue_code(session, w.fable.settings, grant, checked)
    return model_response(ConsentRedirect(redirect=location))


async def _resolve(request: Request, client_id: str | None) -> None:
    """Fetch the client's metadata document when its id is a URL (rate limited per address: each
    makes Fable fetch a page)."""
    if documents.is_document_id(client_id):
        w = web(request)
        await w.limiter.hit(request, "oauth_document")
        await documents.resolve(w.fable.db, w.fable.settings, client_id)


async def _checked(session: AsyncSession, w: WebContext, params: AuthorizationParams) -> server.AuthorizationRequest:
    values = {k: v for k, v in params.model_dump(exclude={"approve"}).items() if v is not None}
    try:
        return await server.check_authorization(session, w.fable.settings, values)
    except server.Redirected as e:
        raise InvalidInput(f"this authorization request is not valid: {e.error.description}",
                           oauth_error=e.error.error) from e


wire_routes = [
    Route(METADATA_PATH, _wire(metadata, ("GET",))),
    Route("/oauth/register", _wire(register, ("POST",))),
    Route("/oauth/authorize", authorize, methods=["GET"]),
    Route("/oauth/token", _wire(token, ("POST",))),
    Route("/oauth/revoke", _wire(revoke, ("POST",))),
]

routes = [
    ApiRoute("/api/oauth/authorization", describe, methods=["GET"],
             doc=Doc("Describe an OAuth authorization request (the consent page)", "oauth", session_only=True,
                     result=ConsentView)),
    ApiRoute("/api/oauth/authorization", decide, methods=["POST"],
             doc=Doc("Approve or deny an OAuth authorization request", "oauth", ConsentDecision, session_only=True,
                     result=ConsentRedirect)),
]
