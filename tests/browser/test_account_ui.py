"""Account pages in Chromium: the link ``fable serve`` prints on an empty instance creates the
first admin, /register opens the sign-up form, a reset link opens a form that sets the password,
and "Sign out everywhere" ends every browser's session, this one included."""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect
from sqlalchemy import update
from support.browser import Session
from support.servers import fable_serve, free_port
from support.users import PASSWORD

from fable_core.config import Settings
from fable_core.db.models import User
from fable_core.identity.account_tokens import issue_token
from fable_core.identity.accounts import RESET_TTL
from fable_core.runtime import Fable

pytestmark = pytest.mark.browser


async def test_the_link_fable_serve_prints_creates_the_first_admin_in_one_step(
    session_at: Callable[[str], AbstractAsyncContextManager[Session]], settings: Settings, tmp_path: Path,
) -> None:
    """What a new operator does: start ``fable serve`` on an empty instance, open the link it
    prints, create the account on the form it opens, and land on their home page as the admin."""
    env = {"DATABASE_URL": settings.database_url or "", "FABLE_DATA_DIR": str(tmp_path), "LLM_PROVIDER": "none"}
    port = free_port()
    async with fable_serve(env, "--port", str(port)) as lines:
        [link] = [line.split("open ")[1].split()[0] for line in lines if line.startswith("No accounts yet")]
        async with session_at(f"http://127.0.0.1:{port}") as ui:
            page = ui.page
            await page.goto(link)
            await expect(page.locator("form button[type=submit]")).to_have_text("Create account")
            await page.fill("#username", "ada")
            await page.fill("#password", PASSWORD)
            await page.locator("form button[type=submit]").click()
            await expect(page.get_by_role("heading", level=1)).to_contain_text("ada")
            assert page.url == f"http://127.0.0.1:{port}/"
            await page.get_by_role("link", name="Settings").click()
            await page.get_by_role("tab", name="Users").click()  # an admin's tab
            await expect(page.locator("#accounts-card")).to_contain_text("ada")
            assert not ui.watch.errors


async def test_register_opens_the_sign_up_form(ui: Session) -> None:
    page = ui.page
    await page.goto("/register")
    await expect(page.locator("form button[type=submit]")).to_have_text("Create account")
    await page.fill("#username", "zoe")
    await page.fill("#password", PASSWORD)
    await page.fill("#email", "zoe@example.com")
    await page.locator("form button[type=submit]").click()
    await expect(page.get_by_role("heading", level=1)).to_contain_text("zoe")
    await page.goto("/settings")
    await expect(page.locator("#email-status")).to_contain_text("zoe@example.com (not verified")
    assert not ui.watch.errors


async def test_a_reset_link_sets_a_new_password(ui: Session, fable: Fable) -> None:
    await ui.register("yann")
    await ui.context.clear_cookies()
    async with fable.db.transaction() as s:
        user_id = (await s.execute(update(User).where(User.username == "yann")
                                   .values(email="yann@example.com").returning(User.id))).scalar_one()
        _, token = await issue_token(s, "reset", RESET_TTL, user_id=user_id)
    page = ui.page
    await page.goto(f"/reset-password?token={token}")
    await page.fill("#new-password", "a fresh and long password")
    await page.get_by_role("button", name="Choose a new password").click()
    await expect(page.locator("#auth-done")).to_contain_text("Your password is changed")
    await page.get_by_role("link", name="Sign in").click()
    await page.fill("#username", "yann")
    await page.fill("#password", "a fresh and long password")
    await page.locator("form button[type=submit]").click()
    await expect(page.get_by_role("heading", level=1)).to_contain_text("yann")
    assert not ui.watch.errors


async def test_sign_out_everywhere(ui: Session, browser: Browser, base_url: str) -> None:
    await ui.register("xena")
    other = await browser.new_context(base_url=base_url)
    try:
        login = await other.request.post(f"{base_url}/api/auth/login", headers={"Origin": base_url},
                                         data={"username": "xena", "password": PASSWORD})
        assert login.ok
        page = ui.page
        await page.goto("/settings")
        await expect(page.locator("#sessions tr")).to_have_count(2)
        await page.click("#sign-out-everywhere")
        await page.get_by_role("button", name="Sign out").last.click()
        await expect(page).to_have_url(re.compile(r"/login"))
        assert (await other.request.get(f"{base_url}/api/notes")).status == 401
        assert (await page.request.get(f"{base_url}/api/notes")).status == 401
    finally:
        await other.close()
