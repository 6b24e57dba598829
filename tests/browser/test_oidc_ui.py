"""Signing in with an OpenID provider from the login page: the button the server offers, the
provider's consent form (a real provider, oidc-provider-mock), and back signed in."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager

import httpx
import pytest
from playwright.async_api import Route, expect
from support.browser import Session
from support.servers import free_port, serve

from fable_core.runtime import Fable
from fable_web.app import create_app


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:
    import oidc_provider_mock  # here, not at collection: it imports Authlib's deprecated authlib.jose

    with oidc_provider_mock.run_server_in_thread() as server:
        yield f"http://localhost:{server.server_port}"


@pytest.fixture
async def oidc_url(fable: Fable, provider: str) -> AsyncIterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    settings = fable.settings.model_copy(update={
        "oidc_issuer": provider, "oidc_client_id": "fable-ui", "oidc_client_secret": "s3cret", "oidc_name": "Testcloak",
        "fable_base_url": url, "local_auth_enabled": False})
    async with serve(create_app(Fable(settings, fable.db)), port) as served:
        yield served


async def _plain(route: Route) -> None:
    await route.continue_()


async def _offline(route: Route) -> None:
    await route.abort()


async def test_the_login_page_offers_only_the_provider_and_signs_in_with_it(
    session_at: Callable[[str], AbstractAsyncContextManager[Session]], oidc_url: str, provider: str,
) -> None:
    async with httpx.AsyncClient() as idp:
        r = await idp.put(f"{provider}/users/uma-sub", json={"email": "uma@example.com", "email_verified": True,
                                                              "preferred_username": "uma"})
    assert r.status_code == 204
    async with session_at(oidc_url) as ui:
        await ui.context.route("https://**", _offline)  # the provider's page links a stylesheet on a CDN
        # the provider's page is not ours, and Fable's /auth/oidc/ answers are redirects to it: no CSP check
        await ui.context.route(f"{provider}/**", _plain)
        await ui.context.route("**/auth/oidc/**", _plain)
        page = ui.page
        await page.goto("/login")
        button = page.get_by_role("link", name="Sign in with Testcloak")
        await expect(button).to_be_visible()
        await expect(page.locator("#password")).to_be_hidden()  # LOCAL_AUTH_ENABLED=false
        assert not ui.watch.errors
        await button.click()
        await page.fill("input[name=sub]", "uma-sub")
        await page.get_by_role("button", name="Authorize").click()
        await expect(page).to_have_url(re.compile(r"^http://127\.0\.0\.1:\d+/$"))
        me = await ui.page.request.get(f"{oidc_url}/api/auth/me")
        assert (await me.json())["user"]["username"] == "uma"


async def test_the_login_page_shows_its_own_words_for_an_error_code(ui: Session) -> None:
    page = ui.page
    await page.goto("/login?error=oidc_state")
    alert = page.get_by_role("alert")
    await expect(alert).to_have_text("That sign-in did not match the one started here. Start again.")
    await page.goto("/login?error=Your+account+is+locked.+Call+0800+SCAM")  # a crafted link: not its words
    await expect(alert).to_have_text("Sign-in with the identity provider failed. Start again.")
    assert not ui.watch.errors
