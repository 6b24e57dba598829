"""Account flows in the UI: an admin's invitation link registers its guest (once), the sign-up
form says who may register, forgot/reset password answer in plain words, and a page that cannot
load says why with a retry instead of going blank."""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

import pytest
from playwright.async_api import expect
from support.browser import Session
from support.page_tour import visit
from support.users import PASSWORD

pytestmark = pytest.mark.browser


async def test_an_empty_instance_opens_on_creating_its_first_account(ui: Session) -> None:
    """Issue 37 item 11: nobody can sign in to a new Fable; it opened on "Sign in" all the same."""
    page = ui.page
    await page.goto("/")
    await expect(page.get_by_role("heading", level=1)).to_have_text("Create the first account")
    await expect(page.locator("form button[type=submit]")).to_have_text("Create account")
    await expect(page.get_by_text("The first account on a new Fable becomes its administrator.")).to_be_visible()
    await page.fill("#username", "ada")
    await page.fill("#password", PASSWORD)
    await page.locator("form button[type=submit]").click()
    await expect(page).not_to_have_url(re.compile(r"/login"))
    assert not ui.watch.errors


async def test_an_invitation_link_made_in_settings_registers_its_guest_once(
    ui: Session, session_at: Callable[[str], AbstractAsyncContextManager[Session]],
) -> None:
    await ui.register("ada")  # the first account: the admin
    await ui.api("PATCH", "/admin/settings", {"registration": "invite"})
    page = ui.page
    await page.goto("/settings/instance")
    await page.get_by_role("button", name="Create link").click()
    link = await page.locator("#invitation-url").inner_text()
    assert "/register?invitation=" in link
    await expect(page.locator("#invitations tr")).to_have_count(1)

    async with session_at(ui.base_url) as guest:
        await guest.page.goto("/register")  # without the link: told how to get in
        await expect(guest.page.locator(".auth-card")).to_contain_text("by invitation")
        await guest.page.goto(link)
        await expect(guest.page.get_by_role("heading", level=1)).to_have_text("Create an account")
        await expect(guest.page.locator(".auth-card")).to_contain_text("You were invited")
        await guest.page.fill("#username", "bea")
        await guest.page.fill("#password", PASSWORD)
        await guest.page.locator("form button[type=submit]").click()
        await expect(guest.page.get_by_role("heading", level=1)).to_contain_text("bea")
        assert not guest.watch.errors

    async with session_at(ui.base_url) as late:  # the same link again: spent, said plainly
        await late.page.goto(link)
        await late.page.fill("#username", "cy")
        await late.page.fill("#password", PASSWORD)
        await late.page.locator("form button[type=submit]").click()
        error = late.page.get_by_role("alert")
        await expect(error).to_be_visible()
        assert "invitation" in (await error.inner_text()).lower()
        await expect(late.page.locator("form button[type=submit]")).to_be_enabled()  # the form stays: retry
    await page.reload()
    await expect(page.locator("#invitations")).to_contain_text("No pending invitations")


async def test_forgot_and_reset_password_answer_in_plain_words(ui: Session) -> None:
    page = ui.page
    await page.goto("/login")
    await page.get_by_role("link", name="Forgot your password?").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text("Reset your password")
    assert await page.title() == "Reset your password · Fable"
    await page.fill("#login", "nobody-here")
    await page.get_by_role("button", name="Reset your password").click()
    # no mail server on this instance: said as it is, not as a failure of ours
    await expect(page.get_by_role("alert")).to_have_text(
        "password reset by email is not available on this instance; ask its admin")

    await page.goto("/reset-password?token=not-a-real-token")
    await page.fill("#new-password", "a fresh and long password")
    await page.get_by_role("button", name="Choose a new password").click()
    error = page.get_by_role("alert")
    await expect(error).to_be_visible()
    text = await error.inner_text()
    assert "token" not in text.lower() or "link" in text.lower(), text
    await expect(page.locator("#new-password")).to_be_visible()  # still there to try again
    assert not ui.watch.errors


async def test_a_page_that_cannot_load_says_why_and_tries_again(ui: Session) -> None:
    await ui.register("dora")
    await ui.api("POST", "/notes", {"title": "Still here"})
    page = ui.page
    await page.goto("/")
    await expect(page.get_by_role("heading", level=1)).to_contain_text("dora")
    await ui.context.set_offline(True)
    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Notes").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text("You are offline")
    await expect(page.get_by_role("alert")).to_contain_text("could not be reached")
    await ui.context.set_offline(False)
    await page.get_by_role("button", name="Try again").click()
    await expect(page.locator("#main")).to_contain_text("Still here")
    await visit(page, "/notes/987654")
    await expect(page.get_by_role("heading", level=1)).to_have_text("Not found")
    await expect(page.get_by_role("link", name="Go home")).to_be_visible()
