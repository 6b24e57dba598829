"""The settings page in Chromium: tabs a keyboard can drive, whose choice is in the URL (reload
and Back keep it); preferences built from the settings' types; an admin disabling a user and
sending a test mail that a real SMTP server receives; the tools an API key's or a connection's
MCP client is offered, chosen and edited."""

from __future__ import annotations

import asyncio
import json
import re

import httpx
import pytest
from playwright.async_api import Route, expect
from sqlalchemy import select
from support.browser import Session
from support.mcp_clients import make_key
from support.oauth import connect
from support.pace import scaled
from support.smtp import smtp_server
from support.users import make_user

from fable_core.db.models import ApiKey, User
from fable_core.errors import Unauthenticated
from fable_core.runtime import Fable

pytestmark = pytest.mark.browser

ADMIN_TABS = ["Account", "Preferences", "Profile", "Calendar sync", "API keys", "Connections", "Import", "Data",
              "Users", "OAuth clients", "Instance", "Logs", "Models"]


async def test_tabs_follow_the_keyboard_and_live_in_the_url(ui: Session, fable: Fable) -> None:
    page = ui.page
    await ui.register("tess")  # the first account: an admin
    await page.goto("/settings")
    tabs = page.get_by_role("tablist", name="Settings").get_by_role("tab")
    await expect(tabs).to_have_text(ADMIN_TABS)
    account = page.get_by_role("tab", name="Account")
    await expect(account).to_have_attribute("aria-selected", "true")
    await expect(page.get_by_role("tabpanel")).to_contain_text("Signed-in browsers")

    await account.focus()
    await page.keyboard.press("ArrowRight")
    await expect(page).to_have_url(re.compile(r"/settings/preferences$"))
    await expect(page.get_by_role("tab", name="Preferences")).to_be_focused()
    await expect(page.locator("#setting-timezone")).to_be_visible()
    await page.keyboard.press("End")
    await expect(page).to_have_url(re.compile(r"/settings/models$"))
    await page.keyboard.press("ArrowRight")  # wraps around
    await expect(page).to_have_url(re.compile(r"/settings$"))
    await page.keyboard.press("ArrowLeft")
    await page.keyboard.press("ArrowLeft")
    await expect(page).to_have_url(re.compile(r"/settings/audit$"))
    await expect(page.get_by_role("tab", name="Logs")).to_have_attribute("aria-selected", "true")
    await expect(page.get_by_role("tab", name="Logs")).to_have_attribute("tabindex", "0")
    await expect(page.get_by_role("tab", name="Users")).to_have_attribute("tabindex", "-1")

    await page.get_by_role("tab", name="API keys").click()
    await page.reload()
    await expect(page.get_by_role("tab", name="API keys")).to_have_attribute("aria-selected", "true")
    await expect(page.locator("#api-keys")).to_be_visible()
    await page.go_back()
    await expect(page).to_have_url(re.compile(r"/settings/audit$"))
    await expect(page.get_by_role("tab", name="Logs")).to_have_attribute("aria-selected", "true")
    await expect(page.locator("#audit-card")).to_be_visible()
    assert not ui.watch.errors


async def test_a_user_sees_no_admin_tab_even_by_its_address(ui: Session, fable: Fable) -> None:
    await make_user(fable, "root", password=None)  # the admin
    await ui.register("uma")
    page = ui.page
    await page.goto("/settings/users")
    await expect(page).to_have_url(re.compile(r"/settings$"))
    await expect(page.get_by_role("tab")).to_have_text(ADMIN_TABS[:8])
    await expect(page.get_by_role("tab", name="Account")).to_have_attribute("aria-selected", "true")
    assert not ui.watch.errors


async def test_preferences_are_checked_and_saved(ui: Session) -> None:
    page = ui.page
    await ui.register("pia")
    await page.goto("/settings/preferences")
    zone = page.locator("#setting-timezone")
    await zone.get_by_label("Time zone").fill("Mars/Olympus")
    await zone.get_by_role("button", name="Save").click()
    await expect(zone.get_by_role("alert")).to_contain_text("is not a known time zone")
    await zone.get_by_label("Time zone").fill("Europe/Lisbon")
    await zone.get_by_role("button", name="Save").click()
    await expect(zone.get_by_role("alert")).to_be_hidden()
    await expect(page.locator(".toast")).to_contain_text("Time zone saved")
    assert (await ui.api("GET", "/settings/timezone"))["value"] == "Europe/Lisbon"

    journal = page.locator("#setting-journal")
    await journal.get_by_role("button", name="Add location").click()
    await journal.get_by_label("Name").fill("Home")
    await journal.get_by_label("Latitude").fill("38.72")
    await journal.get_by_label("Longitude").fill("-9.14")
    await journal.get_by_label("Temperature unit").select_option("fahrenheit")
    await journal.get_by_label("Sun").uncheck()
    await journal.get_by_role("button", name="Save").click()
    await expect(page.locator(".toast").last).to_contain_text("Journal saved")
    saved = (await ui.api("GET", "/settings/journal"))["value"]
    assert saved["locations"] == [{"name": "Home", "lat": 38.72, "lon": -9.14}]
    assert saved["temperature_unit"] == "fahrenheit" and "sun" not in saved["days"]

    await page.reload()
    await expect(page.locator("#setting-journal").get_by_label("Name")).to_have_value("Home")
    await zone.get_by_role("button", name="Reset to default").click()
    await expect(zone.get_by_label("Time zone")).to_have_value("UTC")
    assert not ui.watch.errors


async def test_an_admin_disables_a_user_and_sends_a_test_mail(ui: Session, fable: Fable) -> None:
    page = ui.page
    await ui.register("ada")
    bob = await make_user(fable, "bob", password=None)
    key = await make_key(fable, bob)
    await page.goto("/settings/users")
    row = page.locator('#accounts tr[data-username="bob"]')
    await expect(row.locator(".account-state")).to_have_text("active")
    await row.get_by_role("button", name="Disable").click()
    await expect(row.locator(".account-state")).to_have_text("disabled")
    with pytest.raises(Unauthenticated):
        await fable.keys.caller(key, "rest")  # this process's server forgot the key at once
    async with fable.db.reading() as s:
        assert await s.scalar(select(User.is_active).where(User.id == bob.user_id)) is False

    async with smtp_server() as (inbox, port):
        await page.get_by_role("tab", name="Instance").click()
        card = page.locator("#mail-card")
        await expect(card.locator("#mail-source")).to_contain_text("No mail server yet")
        await card.get_by_label("Server", exact=True).fill("127.0.0.1")
        await card.get_by_label("Port", exact=True).fill(str(port))
        await card.get_by_label("Encryption").select_option("none")
        await card.get_by_label("From address").fill("fable@example.com")
        await card.get_by_role("button", name="Save").click()
        await expect(page.locator(".toast")).to_contain_text("Mail settings saved")
        await card.get_by_label("Send a test mail to").fill("ada@example.com")
        await card.get_by_role("button", name="Send test mail").click()
        await expect(page.locator("#mail-test-status")).to_contain_text(
            f"Sent to ada@example.com through 127.0.0.1:{port}")
        mail = await asyncio.wait_for(inbox.messages.get(), scaled(10))
    assert (mail["To"], mail["Subject"]) == ("ada@example.com", "Fable test message")
    await ui.shot("settings-admin")

    await page.get_by_role("tab", name="Logs").click()
    actions = page.locator("#audit-rows tr")
    await expect(actions).to_have_count(3)
    assert [await r.get_attribute("data-action") for r in await actions.all()] == [
        "mail.test", "instance.mail", "user.disable"]
    await fable.dispatcher.usage.flush()  # request rows are written in batches, within a second
    await page.locator("#log-category").select_option("request")
    await expect(page.locator("#audit-rows tr[data-category=request]").first).to_be_visible()
    await page.locator("#log-action").fill("/api/admin/mail")
    await page.get_by_role("button", name="Filter").click()
    await expect(page.locator("#audit-rows tr[data-action='/api/admin/mail/test']")).to_have_count(1)
    routes = {await r.get_attribute("data-action") for r in await page.locator("#audit-rows tr").all()}
    assert routes <= {"/api/admin/mail", "/api/admin/mail/test"}, routes
    assert not ui.watch.errors


async def _stored_toolsets(fable: Fable, name: str) -> list[str] | None:
    async with fable.db.reading() as session:
        return await session.scalar(select(ApiKey.toolsets).where(ApiKey.name == name))


async def test_a_keys_tools_are_chosen_at_creation_shown_and_edited(ui: Session, fable: Fable) -> None:
    """The creation form's chooser (the default set ticked), the row's choice in a few words, its
    Edit dialog saving with PATCH; a save the server refuses is explained and changes nothing."""
    page = ui.page
    await ui.register("kai")
    await page.goto("/settings/keys")
    form = page.locator("#key-form")
    await form.get_by_label("Key name").fill("Cursor")
    await expect(page.locator("#key-toolsets-summary")).to_have_text("default")
    await form.get_by_text("Tools offered").click()  # opens the chooser
    await expect(form.get_by_role("checkbox", name="Default set")).to_be_checked()
    await expect(form.locator("[data-toolset=calendar]")).to_contain_text("Calendar events")  # its line, from REST
    await form.get_by_role("checkbox", name="calendar", exact=True).check()
    await form.get_by_role("checkbox", name="feeds", exact=True).check()
    await expect(page.locator("#key-toolsets-summary")).to_have_text("default + calendar, feeds")
    await form.get_by_role("button", name="Create key").click()
    await expect(page.locator("#new-key")).to_be_visible()
    row = page.locator("#api-keys tbody tr", has_text="Cursor")
    await expect(row.locator(".toolsets-summary")).to_have_text("default + calendar, feeds")
    assert await _stored_toolsets(fable, "Cursor") == ["default", "calendar", "feeds"]
    await expect(page.locator("#key-toolsets-summary")).to_have_text("default")  # the form starts afresh

    await row.get_by_role("button", name="Edit the tools “Cursor” is offered").click()
    dialog = page.get_by_role("dialog", name="Tools “Cursor” is offered")
    await expect(dialog.get_by_role("checkbox", name="feeds", exact=True)).to_be_checked()
    await dialog.get_by_role("checkbox", name="Everything").check()
    await expect(dialog.get_by_role("checkbox", name="calendar", exact=True)).to_be_disabled()
    await dialog.get_by_role("button", name="Save").click()
    await expect(dialog).to_be_hidden()
    await expect(row.locator(".toolsets-summary")).to_have_text("everything")
    await expect(row.get_by_role("button", name="Edit the tools “Cursor” is offered")).to_be_focused()
    assert await _stored_toolsets(fable, "Cursor") == ["all"]

    async def smuggle(route: Route) -> None:  # what a stale page might send: an entry the server no longer knows
        await route.continue_(post_data=json.dumps({"toolsets": ["default", "nope"]}))

    await page.route("**/api/api-keys/*", smuggle)
    await row.get_by_role("button", name="Edit the tools “Cursor” is offered").click()
    await dialog.get_by_role("checkbox", name="Everything").uncheck()
    await dialog.get_by_role("button", name="Save").click()
    await expect(dialog.get_by_role("alert")).to_contain_text("toolsets: unknown nope")
    await page.unroute("**/api/api-keys/*", smuggle)
    await dialog.get_by_role("button", name="Cancel").click()
    await expect(row.locator(".toolsets-summary")).to_have_text("everything")
    assert await _stored_toolsets(fable, "Cursor") == ["all"]

    await row.get_by_role("button", name="Edit the tools “Cursor” is offered").click()
    await dialog.get_by_role("checkbox", name="Everything").uncheck()
    await expect(dialog.get_by_role("checkbox", name="Default set")).to_be_checked()  # back to the default set
    await dialog.get_by_role("checkbox", name="Default set").uncheck()
    await dialog.get_by_role("button", name="Save").click()
    await expect(dialog.get_by_role("alert")).to_contain_text("Choose at least one")
    await dialog.get_by_role("button", name="Use the server's default").click()
    await expect(row.locator(".toolsets-summary")).to_have_text("server's default")
    assert await _stored_toolsets(fable, "Cursor") is None
    assert not ui.watch.errors and not ui.watch.dialogs


async def test_a_connections_tools_are_shown_and_edited(ui: Session, fable: Fable) -> None:
    page = ui.page
    await ui.register("cleo")  # the first account: pins the public URL the issuer is named by
    me = (await ui.api("GET", "/auth/me"))["user"]
    async with httpx.AsyncClient(base_url=ui.base_url, timeout=scaled(30)) as http:
        await connect(fable, http, me["id"])
    await page.goto("/settings/connections")
    row = page.locator("#connections tbody tr", has_text="Test connector")
    await expect(row.locator(".toolsets-summary")).to_have_text("server's default")
    await row.get_by_role("button", name="Edit the tools “Test connector” is offered").click()
    dialog = page.get_by_role("dialog", name="Tools “Test connector” is offered")
    await expect(dialog.get_by_role("checkbox", name="Default set")).to_be_checked()
    await dialog.get_by_role("checkbox", name="people", exact=True).check()
    await dialog.get_by_role("button", name="Save").click()
    await expect(row.locator(".toolsets-summary")).to_have_text("default + people")
    assert [c["toolsets"] for c in (await ui.api("GET", "/oauth/connections"))["items"]] == [["default", "people"]]
    assert not ui.watch.errors and not ui.watch.dialogs
