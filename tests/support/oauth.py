"""What the OAuth tests share: a registered client, PKCE pairs, a signed-in browser that
approves on the consent page, and the code it brings back."""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
from starlette.responses import Response

from fable_core.identity.login_sessions import start_session
from fable_core.runtime import Fable
from fable_web.sessions import COOKIE, SessionCodec

from .pace import scaled

REDIRECT = "http://127.0.0.1:8765/callback"


def pkce() -> tuple[str, str]:
    """A code verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def query_of(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query))


async def register(http: httpx.AsyncClient, name: str = "Test connector", **metadata: Any) -> dict[str, Any]:
    body = {"client_name": name, "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]} | metadata
    r = await http.post("/oauth/register", json=body)
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


@asynccontextmanager
async def browser(fable: Fable, base_url: str, user_id: int) -> AsyncIterator[httpx.AsyncClient]:
    """A browser with a session of ``user_id`` (started as sign-in starts one, without the
    second of argon2 a password costs), sending its same-origin Origin header."""
    async with fable.db.transaction() as session:
        started = await start_session(session, user_id)
    signed = Response()
    SessionCodec(fable.settings.secret_key(), secure=False).attach(signed, started.token)
    cookie = signed.headers["set-cookie"].split(";", 1)[0].split("=", 1)[1]
    async with httpx.AsyncClient(base_url=base_url, headers={"origin": base_url}, cookies={COOKIE: cookie},
                                 timeout=scaled(30)) as b:
        yield b


def authorization(client_id: str, challenge: str, **extra: str) -> dict[str, str]:
    return {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": "xyz",
            "code_challenge": challenge, "code_challenge_method": "S256", "scope": "read write"} | extra


async def approve(b: httpx.AsyncClient, params: dict[str, str]) -> dict[str, str]:
    """Go through /oauth/authorize and the consent page, approving; the redirect's parameters."""
    r = await b.get("/oauth/authorize", params=params)
    assert r.status_code == 302, r.text
    location = r.headers["location"]
    if location.startswith("/oauth/consent"):
        asked = query_of(location)
        shown = await b.get("/api/oauth/authorization", params=asked)
        assert shown.status_code == 200, shown.text
        decided = await b.post("/api/oauth/authorization", json=asked | {"approve": True})
        assert decided.status_code == 200, decided.text
        location = decided.json()["redirect"]
    assert location.startswith(params["redirect_uri"].split("?")[0]), location
    return query_of(location)


async def tokens(http: httpx.AsyncClient, client_id: str, code: str, verifier: str, **extra: str) -> httpx.Response:
    return await http.post("/oauth/token", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": client_id,
        "code_verifier": verifier} | extra)


async def connect(fable: Fable, http: httpx.AsyncClient, user_id: int,
                  scope: str = "read write") -> tuple[dict[str, Any], dict[str, Any]]:
    """A registered client, approved by ``user_id``: (client, token response)."""
    client = await register(http)
    verifier, challenge = pkce()
    async with browser(fable, str(http.base_url), user_id) as b:
        back = await approve(b, authorization(client["client_id"], challenge, scope=scope))
    r = await tokens(http, client["client_id"], back["code"], verifier)
    assert r.status_code == 200, r.text
    return client, r.json()
