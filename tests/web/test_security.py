"""Security defaults: CSRF on cookie sessions, security headers, cross-site form posts."""

from __future__ import annotations

import httpx
import pytest
from starlette.applications import Starlette
from support.users import PASSWORD
from support.web import error_of, make_client, signed_in

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def test_cookie_requests_without_origin_or_token_are_refused(
    app: Starlette, alice: Caller, row_counts
) -> None:
    async with signed_in(app, "alice") as browser:
        csrf = (await browser.get("/api/auth/me")).json()["csrf_token"]
        before = await row_counts()
        del browser.headers["origin"]
        r = await browser.post("/api/notes", json={"title": "forged"})
        assert r.status_code == 403 and error_of(r)["details"]["reason"] == "csrf"
        r = await browser.post("/api/notes", json={"title": "forged"}, headers={"origin": "https://evil.example"})
        assert r.status_code == 403
        r = await browser.post("/api/notes", json={"title": "forged"}, headers={"x-csrf-token": "guess"})
        assert r.status_code == 403
        assert await row_counts() == before
        assert (await browser.get("/api/notes")).status_code == 200   # safe methods need neither
        r = await browser.post("/api/notes", json={"title": "with token"}, headers={"x-csrf-token": csrf})
        assert r.status_code == 200


async def test_cross_site_login_is_refused(app: Starlette, alice: Caller) -> None:
    async with make_client(app, origin="https://evil.example") as c:
        r = await c.post("/api/auth/login", json={"username": "alice", "password": PASSWORD})
        assert r.status_code == 403 and "set-cookie" not in r.headers


async def test_configured_base_url_is_same_origin(fable, alice: Caller) -> None:
    from fable_core.runtime import Fable
    from fable_web.app import create_app

    public = Fable(fable.settings.model_copy(update={"fable_base_url": "https://fable.example.com"}), fable.db)
    async with make_client(create_app(public), origin="https://fable.example.com") as c:
        r = await c.post("/api/auth/login", json={"username": "alice", "password": PASSWORD})
        assert r.status_code == 200
        assert (await c.post("/api/notes", json={"title": "ok"})).status_code == 200


async def test_security_headers_on_api_and_ui(client: httpx.AsyncClient) -> None:
    for path in ("/api/health", "/", "/api/nowhere"):
        r = await client.get(path)
        csp = r.headers["content-security-policy"]
        directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
        assert directives["script-src"] == "'self'" and "unsafe" not in directives["script-src"]
        assert directives["style-src"] == "'self'"  # no inline styles either
        assert directives["frame-ancestors"] == "'none'"
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["referrer-policy"] == "no-referrer"
    assert (await client.get("/api/health")).headers["cache-control"] == "no-store"


async def test_openapi_and_health_are_public(app: Starlette) -> None:
    async with make_client(app) as c:
        assert (await c.get("/api/openapi.json")).status_code == 200
        assert (await c.get("/api/health")).status_code == 200
        assert (await c.get("/api/auth/me")).status_code == 401


@pytest.mark.parametrize("path", ["/api/auth/register", "/api/auth/login", "/api/notes", "/",
                                  "/.well-known/oauth-protected-resource", "/mcp"])
async def test_a_host_this_fable_does_not_answer_to_is_refused_everywhere(
    client: httpx.AsyncClient, row_counts, path: str
) -> None:
    """DNS rebinding: a page on attacker.example, its name pointed at 127.0.0.1, reached a fresh
    instance with Host and Origin attacker.example and registered itself as the admin."""
    before = await row_counts()
    evil = {"host": "attacker.example", "origin": "http://attacker.example"}
    r = await client.post(path, json={"username": "mallory", "password": PASSWORD}, headers=evil)
    assert r.status_code == 421 and "FABLE_ALLOWED_HOSTS" in r.json()["error"]["message"]
    assert (await client.get(path, headers=evil)).status_code == 421
    assert await row_counts() == before


async def test_allowed_hosts_for_the_whole_app(fable: Fable) -> None:
    from fable_web.app import create_app

    custom = Fable(fable.settings.model_copy(update={
        "fable_allowed_hosts": ["notes.example.org", "Wiki.Example.org:*"],
        "fable_base_url": "https://fable.example.com"}), fable.db)
    async with make_client(create_app(custom)) as c:
        for host in ("localhost", "LOCALHOST:8000", "127.0.0.1:1234", "[::1]:8000", "notes.example.org",
                     "fable.example.com", "wiki.example.org", "wiki.example.org:8443"):
            assert (await c.get("/api/health", headers={"host": host})).status_code == 200, host
        for host in ("notes.example.org:8443", "other.example", "fable.example.com.evil.example",
                     "127.0.0.2", "localhost.evil.example"):
            assert (await c.get("/api/health", headers={"host": host})).status_code == 421, host
        meta = await c.get("/.well-known/oauth-protected-resource", headers={"host": "notes.example.org"})
        assert meta.json()["resource"] == "https://fable.example.com/mcp"   # the configured URL
    anything = Fable(fable.settings.model_copy(update={"fable_allowed_hosts": ["*"]}), fable.db)
    async with make_client(create_app(anything)) as c:
        assert (await c.get("/api/health", headers={"host": "anything.example"})).status_code == 200


async def test_a_database_that_is_down_is_503_everywhere(fable: Fable, alice: Caller) -> None:
    """Not 500: every route that needs the database says it is unavailable, in the usual shape."""
    from sqlalchemy.ext.asyncio import create_async_engine

    from fable_core.db.database import Database
    from fable_web.app import create_app

    gone = Database(create_async_engine("postgresql+asyncpg://fable@127.0.0.1:9/fable"), "gone")
    app = create_app(Fable(fable.settings, gone))
    try:
        async with make_client(app, origin="http://localhost") as c:
            requests = [("POST", "/api/auth/login", {"username": "alice", "password": "whatever it is"}),
                        ("POST", "/api/auth/register", {"username": "carol", "password": "whatever it is"}),
                        ("GET", "/api/auth/registration", None), ("GET", "/api/health", None)]
            for method, path, body in requests:
                r = await c.request(method, path, json=body)
                assert r.status_code == 503, (path, r.text)
                assert r.json()["error" if path != "/api/health" else "database"]
            c.headers["authorization"] = "Bearer fable_x_y"
            r = await c.get("/api/notes")
            assert r.status_code == 503 and error_of(r)["type"] == "unavailable"
    finally:
        await gone.close()
