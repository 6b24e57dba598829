"""OIDC sign-in against a real provider: the whole flow, linking, refusals."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet, OctKey, RSAKey
from sqlalchemy import func, select, update
from support.oidc import oidc_browser
from support.users import PASSWORD, make_user

from fable_core.db.models import LoginSession, User, UserIdentity
from fable_core.errors import Unauthenticated
from fable_core.identity.oidc import OidcClient
from fable_core.runtime import Fable
from fable_web.cli import main


async def consent(browser: httpx.AsyncClient, sub: str) -> str:
    """Start at Fable, consent at the provider as ``sub``: the callback URL the provider sends back."""
    r = await browser.get("/auth/oidc/login")
    assert r.status_code == 303, r.text
    authorize = r.headers["location"]
    query = parse_qs(urlsplit(authorize).query)
    assert query["code_challenge_method"] == ["S256"] and query["nonce"] and query["state"]
    assert query["redirect_uri"] == [str(browser.base_url.join("/auth/oidc/callback"))]
    async with httpx.AsyncClient() as idp:
        r = await idp.post(authorize, data={"sub": sub})
    assert r.status_code == 302, r.text
    return r.headers["location"]


async def sign_in(browser: httpx.AsyncClient, sub: str) -> httpx.Response:
    return await browser.get(await consent(browser, sub))


def refused(r: httpx.Response) -> str:
    """The error code a failed sign-in sends the browser back to the login page with."""
    assert r.status_code == 303 and r.headers["location"].startswith("/login?error="), r.headers
    return parse_qs(urlsplit(r.headers["location"]).query)["error"][0]


async def users(fable: Fable) -> int:
    async with fable.db.reading() as s:
        return await s.scalar(select(func.count()).select_from(User)) or 0


async def test_signing_in_creates_the_account_once_and_starts_a_session(
    browser: httpx.AsyncClient, person: Callable[..., str], fable: Fable,
) -> None:
    sub = person(email="Zoe@Example.com", email_verified=True, preferred_username="zoe")
    r = await sign_in(browser, sub)
    assert r.status_code == 303 and r.headers["location"] == "/", r.headers
    me = (await browser.get("/api/auth/me")).json()
    assert me["user"]["username"] == "zoe" and me["user"]["email"] == "zoe@example.com"
    assert me["user"]["role"] == "admin"  # the instance's first account, as at registration
    browser.cookies.clear()
    assert (await sign_in(browser, sub)).headers["location"] == "/"
    assert (await browser.get("/api/auth/me")).json()["user"]["username"] == "zoe"
    assert await users(fable) == 1


async def test_a_verified_email_links_an_existing_account_and_an_unverified_one_does_not(
    browser: httpx.AsyncClient, person: Callable[..., str], fable: Fable,
) -> None:
    alice = await make_user(fable, "alice")
    async with fable.db.transaction() as s:
        user = await s.get(User, alice.user_id)
        assert user is not None
        user.email, user.email_verified_at = "alice@example.com", func.now()
    r = await sign_in(browser, person(email="alice@example.com", email_verified=False, preferred_username="alice"))
    assert r.headers["location"] == "/"
    assert (await browser.get("/api/auth/me")).json()["user"]["username"] == "alice-2"  # a new account
    browser.cookies.clear()
    sub = person(email="ALICE@example.com", email_verified=True)
    assert (await sign_in(browser, sub)).headers["location"] == "/"
    assert (await browser.get("/api/auth/me")).json()["user"]["username"] == "alice"
    async with fable.db.reading() as s:
        assert await s.scalar(select(UserIdentity.user_id).where(UserIdentity.subject == sub)) == alice.user_id


async def test_a_wrong_state_or_a_lost_cookie_is_refused(
    browser: httpx.AsyncClient, person: Callable[..., str], fable: Fable,
) -> None:
    sub = person(email="x@example.com", email_verified=True)
    back = await consent(browser, sub)
    assert refused(await browser.get(back.replace("state=", "state=x"))) == "oidc_state"
    assert (await browser.get("/api/auth/me")).status_code == 401
    back = await consent(browser, sub)
    async with httpx.AsyncClient() as elsewhere:  # another browser: no flow cookie
        assert refused(await elsewhere.get(back)) == "oidc_expired"
    assert refused(await browser.get("/auth/oidc/callback")) == "oidc_response"
    await consent(browser, sub)
    said = await browser.get("/auth/oidc/callback?error=access_denied&error_description=Buy+at+evil.example")
    assert refused(said) == "oidc_denied"  # a code, never the provider's (or a crafted link's) words
    assert await users(fable) == 0


async def test_no_account_is_made_when_auto_create_is_off(
    fable: Fable, provider: str, person: Callable[..., str],
) -> None:
    async with oidc_browser(fable, provider, oidc_auto_create=False) as browser:
        said = refused(await sign_in(browser, person(email="new@example.com", email_verified=True)))
    assert said == "oidc_no_account"
    assert await users(fable) == 0


async def test_a_provider_that_does_not_answer_is_a_clear_error(fable: Fable) -> None:
    async with oidc_browser(fable, "http://127.0.0.1:9") as browser:
        assert refused(await browser.get("/auth/oidc/login")) == "oidc_unavailable"
        assert (await browser.get("/api/auth/methods")).json() == {
            "password": True, "oidc": {"name": "Testcloak", "url": "/auth/oidc/login"}}


async def test_password_sign_in_can_be_turned_off(
    fable: Fable, provider: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    await make_user(fable, "alice")
    async with oidc_browser(fable, provider, local_auth_enabled=False) as c:
        assert (await c.get("/api/auth/methods")).json() == {
            "password": False, "oidc": {"name": "Testcloak", "url": "/auth/oidc/login"}}
        for path, body in [("login", {"username": "alice", "password": PASSWORD}),
                           ("register", {"username": "eve", "password": PASSWORD}),
                           ("forgot-password", {"username": "alice"}),
                           ("reset-password", {"token": "x", "password": PASSWORD})]:
            r = await c.post(f"/api/auth/{path}", json=body)
            assert r.status_code == 403, (path, r.text)
            assert r.json()["error"]["message"].startswith("password sign-in and registration are turned off")
        assert (await c.get("/api/auth/me")).status_code == 401
    assert await users(fable) == 1
    monkeypatch.setenv("LOCAL_AUTH_ENABLED", "false")
    assert await asyncio.to_thread(main, ["user", "passwd", "alice", "--password-stdin"]) == 1
    assert "passwords are turned off on this instance" in capsys.readouterr().err


# The ID token's checks, against a provider whose keys the test holds (served by httpx's
# MockTransport: the remote end, not our code).
ISSUER = "https://idp.example"
KEY = RSAKey.generate_key(2048, parameters={"kid": "k1"}, private=True)


def _provider(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/.well-known/openid-configuration":
        return httpx.Response(200, json={"issuer": ISSUER, "authorization_endpoint": f"{ISSUER}/auth",
                                         "token_endpoint": f"{ISSUER}/token", "jwks_uri": f"{ISSUER}/jwks"})
    return httpx.Response(200, json=KeySet([KEY]).as_dict(private=False))


def _token(key: Any = KEY, alg: str = "RS256", **changes: Any) -> str:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": "fable-test", "sub": "s1", "iat": now, "exp": now + 300, "nonce": "n1"}
    claims.update(changes)
    return jwt.encode({"alg": alg, "kid": "k1"}, {k: v for k, v in claims.items() if v is not None}, key)


@pytest.mark.parametrize("token", [
    pytest.param(lambda: _token(RSAKey.generate_key(2048, parameters={"kid": "k1"}, private=True)), id="forged"),
    pytest.param(lambda: _token(OctKey.import_key("k" * 32), alg="HS256"), id="hmac"),
    pytest.param(lambda: _token(nonce="other"), id="nonce"),
    pytest.param(lambda: _token(aud="someone-else"), id="audience"),
    pytest.param(lambda: _token(iss="https://evil.example"), id="issuer"),
    pytest.param(lambda: _token(exp=int(time.time()) - 600), id="expired"),
    pytest.param(lambda: _token(nonce=None), id="no-nonce"),
    pytest.param(lambda: "not.a.token", id="garbage"),
])
async def test_a_bad_id_token_is_refused(settings: Any, token: Callable[[], str]) -> None:
    client = OidcClient(settings.model_copy(update={"oidc_issuer": ISSUER, "oidc_client_id": "fable-test"}),
                        transport=httpx.MockTransport(_provider))
    assert (await client.validate(_token(), "n1"))["sub"] == "s1"
    with pytest.raises(Unauthenticated, match="ID token"):
        await client.validate(token(), "n1")


async def test_a_password_less_account_changes_its_email_after_a_recent_sign_in(
    browser: httpx.AsyncClient, person: Callable[..., str], fable: Fable,
) -> None:
    sub = person(email="vic@example.com", email_verified=True, preferred_username="vic")
    assert (await sign_in(browser, sub)).headers["location"] == "/"
    csrf = {"X-CSRF-Token": (await browser.get("/api/auth/me")).json()["csrf_token"]}
    r = await browser.put("/api/auth/email", json={"email": "Vic@New.example"}, headers=csrf)
    assert r.status_code == 200, r.text
    assert (r.json()["user"]["email"], r.json()["user"]["email_verified"]) == ("vic@new.example", False)
    async with fable.db.transaction() as s:  # the sign-in is now eleven minutes old
        await s.execute(update(LoginSession).values(created_at=func.now() - timedelta(minutes=11)))
    r = await browser.put("/api/auth/email", json={"email": "mallory@evil.example"}, headers=csrf)
    assert r.status_code == 403 and r.json()["error"]["details"]["reason"] == "reauthenticate"
    assert (await browser.get("/api/auth/me")).json()["user"]["email"] == "vic@new.example"  # unchanged
    browser.cookies.clear()
    assert (await sign_in(browser, sub)).headers["location"] == "/"  # signing in again is enough
    csrf = {"X-CSRF-Token": (await browser.get("/api/auth/me")).json()["csrf_token"]}
    assert (await browser.put("/api/auth/email", json={"email": None}, headers=csrf)).status_code == 200
    async with fable.db.transaction() as s:  # an account with a password still needs it
        await s.execute(update(User).values(password_hash="$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$aGFzaA"))
    r = await browser.put("/api/auth/email", json={"email": "vic@example.com"}, headers=csrf)
    assert r.status_code == 422 and r.json()["error"]["details"]["field"] == "password"
