"""Security defaults: CSRF on cookie sessions, security headers, cross-site form posts."""

from __future__ import annotations

import httpx
from starlette.applications import Starlette
from web_helpers import error_of, make_client, signed_in

from fable_core.caller import Caller


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
        r = await c.post("/api/auth/login", json={"username": "alice", "password": "correct horse battery"})
        assert r.status_code == 403 and "set-cookie" not in r.headers


async def test_configured_base_url_is_same_origin(fable, alice: Caller) -> None:
    from fable_core.runtime import Fable
    from fable_web.app import create_app

    public = Fable(fable.settings.model_copy(update={"fable_base_url": "https://fable.example.com"}), fable.db)
    async with make_client(create_app(public), origin="https://fable.example.com") as c:
        r = await c.post("/api/auth/login", json={"username": "alice", "password": "correct horse battery"})
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
