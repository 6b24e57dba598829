"""The OAuth consent page in Chromium: an MCP client's authorization request, the page that
names the client, where it sends you back and what it may do; Allow brings the browser back to
the client with a code that buys a working token; Settings → Connections lists and revokes it."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx
import pytest
from playwright.async_api import Route, expect
from support.browser import Session

pytestmark = pytest.mark.browser

CALLBACK = "http://127.0.0.1:8765/callback"


async def _plain(route: Route) -> None:
    """/oauth/authorize answers with a redirect: let the browser follow it (the CSP check's
    fetch would follow it itself and leave the page at the old URL)."""
    await route.continue_()


async def test_allowing_a_connector_on_the_consent_page_and_revoking_it(ui: Session) -> None:
    page = ui.page
    await ui.context.route("**/oauth/authorize?*", _plain)
    await ui.register("olga")  # the first account: pins the public URL the issuer is named by
    async with httpx.AsyncClient(base_url=ui.base_url) as http:
        client = (await http.post("/oauth/register", json={
            "client_name": "Claude connector", "redirect_uris": [CALLBACK]})).json()
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        landed: list[str] = []

        async def callback(route: Route) -> None:  # the client's loopback listener
            landed.append(route.request.url)
            await route.fulfill(status=200, content_type="text/plain", body="You can close this tab.")

        await ui.context.route(f"{CALLBACK}*", callback)
        await page.goto("/oauth/authorize?" + urlencode({
            "response_type": "code", "client_id": client["client_id"], "redirect_uri": CALLBACK, "state": "s1",
            "code_challenge": challenge, "code_challenge_method": "S256", "scope": "read write"}))
        await expect(page).to_have_url(re.compile(r"/oauth/consent\?"))
        await expect(page.locator("#consent-client")).to_have_text("Claude connector")
        await expect(page.locator("#consent-host")).to_have_text("127.0.0.1:8765")
        await expect(page.locator("#consent-scopes li")).to_have_count(2)
        await ui.shot("consent")
        await page.locator("#consent-allow").click()
        await expect(page).to_have_url(re.compile(r"^http://127\.0\.0\.1:8765/callback\?code="))
        back = dict(parse_qsl(urlsplit(landed[-1]).query))
        assert back["state"] == "s1"
        issued = (await http.post("/oauth/token", data={
            "grant_type": "authorization_code", "code": back["code"], "redirect_uri": CALLBACK,
            "client_id": client["client_id"], "code_verifier": verifier})).json()
        bearer = {"authorization": f"Bearer {issued['access_token']}"}
        assert (await http.get("/api/notes", headers=bearer)).status_code == 200

        await page.goto("/settings/connections")
        row = page.locator("#connections tbody tr").first
        await expect(row).to_contain_text("Claude connector")
        await expect(row).to_contain_text("read and write")
        await row.get_by_role("button", name="Revoke").click()
        await page.get_by_role("dialog").get_by_role("button", name="Revoke").click()
        await expect(page.locator("#connections tbody")).to_contain_text("No connected apps")
        assert (await http.get("/api/notes", headers=bearer)).status_code == 401
    assert ui.watch.errors == [] and ui.watch.dialogs == []


async def test_a_bad_request_is_explained_and_never_leaves_fable(ui: Session) -> None:
    page = ui.page
    await ui.context.route("**/oauth/authorize?*", _plain)
    await ui.register("pia")
    await page.goto("/oauth/authorize?" + urlencode({
        "response_type": "code", "client_id": "fc_unknown", "redirect_uri": "https://evil.example/cb",
        "code_challenge": "x" * 43, "code_challenge_method": "S256"}))
    await expect(page.locator("#consent-error")).to_contain_text("unknown or disabled OAuth client_id")
    assert urlsplit(page.url).netloc == urlsplit(ui.base_url).netloc
    assert ui.watch.errors == [e for e in ui.watch.errors if "422" in e]  # the refused request, nothing else
