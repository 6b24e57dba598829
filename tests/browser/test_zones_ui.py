"""One "today" in every time zone (issue 38, item 1): the first sign-in takes the browser's zone
for the timezone setting; after that every page counts days in the setting, as the tools do,
whatever the browser's clock says, and a browser elsewhere is asked once whether to move.

Browsers in Tokyo, New York and UTC use one server. Days are computed when the test runs
(never at import); the pair that proves the pages follow the setting and not the browser is
26 hours apart (Kiritimati, UTC+14, and UTC-12), so their dates differ at every moment."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from playwright.async_api import expect
from support.browser import PASSWORD, Session
from support.pace import scaled
from support.users import make_user

from fable_core.runtime import Fable

Zoned = Callable[[str], AbstractAsyncContextManager[Session]]


def today_in(zone: str) -> date:
    return datetime.now(UTC).astimezone(ZoneInfo(zone)).date()


def long_date(day: date) -> str:
    return f"{day:%A}, {day:%B} {day.day}"  # the home page's line, en-US


async def _setting(ui: Session) -> str:
    return str((await ui.api("GET", "/settings/timezone"))["value"])


async def _setting_becomes(ui: Session, zone: str) -> None:
    """The page stores the setting after it has shown: wait for it (a bounded wait)."""
    deadline = asyncio.get_running_loop().time() + scaled(5)
    for _ in range(1000):
        found = await _setting(ui)
        if found == zone or asyncio.get_running_loop().time() > deadline:
            break
        await asyncio.sleep(0.05)
    assert found == zone


async def _sign_in(ui: Session, username: str) -> None:
    await ui.page.goto("/login")
    await ui.page.fill("#username", username)
    await ui.page.fill("#password", PASSWORD)
    await ui.page.get_by_role("button", name="Sign in", exact=True).last.click()
    await expect(ui.page.locator("h1")).to_contain_text(username)


async def test_a_first_sign_in_takes_the_browser_s_zone_and_every_page_counts_its_days(
        fable: Fable, zoned: Zoned) -> None:
    for zone in ("Asia/Tokyo", "America/New_York", "UTC"):
        username = "tz_" + zone.rsplit("/", 1)[-1].lower()
        await make_user(fable, username, password=PASSWORD)
        async with zoned(zone) as ui:
            await _sign_in(ui, username)
            await _setting_becomes(ui, zone)
            today = today_in(zone)
            await expect(ui.page.locator(".page-head p.muted")).to_have_text(long_date(today))
            await ui.api("POST", "/notes", {"title": "Water the plants", "due_date": today.isoformat()})
            tomorrow = (today + timedelta(days=1)).isoformat()
            await ui.api("POST", "/notes", {"title": "Pay the rent", "due_date": tomorrow})
            await ui.page.goto("/tasks")
            row = ui.page.locator(".task-line", has_text="Water the plants")
            await expect(row.locator(".task-due")).to_have_text("today")
            await expect(row.locator(".due-overdue")).to_have_count(0)
            await expect(ui.page.locator(".task-line", has_text="Pay the rent").locator(".task-due")).to_have_text(
                "tomorrow")
            assert not ui.watch.errors, ui.watch.errors


async def test_pages_follow_the_setting_not_the_browser_and_a_browser_elsewhere_is_asked_once(
        fable: Fable, zoned: Zoned) -> None:
    home, browser = "Pacific/Kiritimati", "Etc/GMT+12"  # 26 hours apart: never the same date
    user = await make_user(fable, "tz_traveller", password=PASSWORD)
    await fable.call("set_setting", {"key": "timezone", "value": home}, user)
    today = today_in(home)
    assert today != today_in(browser)
    await fable.call("create_note", {"title": "Call the bank", "due_date": today.isoformat()}, user)
    async with zoned(browser) as ui:
        await _sign_in(ui, "tz_traveller")
        page = ui.page
        await expect(page.locator(".page-head p.muted")).to_have_text(long_date(today))
        question = page.get_by_role("region", name="Time zone")
        await expect(question).to_have_text(
            f"Fable counts your days in {home}; this browser is in {browser}.Use {browser}Keep {home}")
        await page.goto("/tasks")
        row = page.locator(".task-line", has_text="Call the bank")
        await expect(row.locator(".task-due")).to_have_text("today")
        await expect(row.locator(".due-overdue")).to_have_count(0)
        await page.goto(f"/calendar?view=month&date={today.isoformat()}")
        await expect(page.locator(".cal-day.today")).to_have_attribute("data-date", today.isoformat())
        await page.goto("/")
        await expect(page.locator(".page-head p.muted")).to_have_text(long_date(today))
        await expect(page.locator(".zone-question")).to_have_count(0)  # asked once
        assert await _setting(ui) == home, "nothing changes until asked"
        assert not ui.watch.errors, ui.watch.errors
    async with zoned(browser) as ui:  # another browser there: asked there too; this time, moved
        await _sign_in(ui, "tz_traveller")
        await ui.page.get_by_role("region", name="Time zone").get_by_role("button", name=f"Use {browser}").click()
        await _setting_becomes(ui, browser)
        await expect(ui.page.locator(".page-head p.muted")).to_have_text(long_date(today_in(browser)))
