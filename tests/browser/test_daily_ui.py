"""Moments and the profile in Chromium: recording a moment (and one at a chosen time), the list by
day, searching, deleting; the Profile tab of settings: facts saved and shown again, the summary
edited, an observation the assistant recorded forgotten. Everything through the generated REST."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import expect
from support.browser import Session

from fable_core.runtime import Fable

pytestmark = pytest.mark.browser


async def test_moments_are_recorded_listed_by_day_searched_and_deleted(ui: Session, fable: Fable) -> None:
    page = ui.page
    await ui.register("mara")
    await page.goto("/")
    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Moments").click()
    await expect(page).to_have_url(re.compile(r"/moments$"))
    await expect(page.locator("#moment-list")).to_contain_text("No moments yet")

    await page.fill("#moment-text", "Coffee with Ana at the <b>market</b>")
    await page.fill("#moment-mood", "happy")
    await page.fill("#moment-tags", "friends, market")
    await page.fill("#moment-place", "Helvetiaplatz")
    await page.get_by_role("button", name="Record").click()
    items = page.locator("#moment-list .moment")
    await expect(items).to_have_count(1)
    await expect(items.first.locator(".moment-text")).to_have_text("Coffee with Ana at the <b>market</b>")
    assert await page.locator("#moment-list b").count() == 0  # user text is never HTML
    await expect(items.first).to_contain_text("#friends")
    await expect(items.first).to_contain_text("@ Helvetiaplatz")
    await expect(page.locator("#moment-text")).to_have_value("")

    await page.fill("#moment-text", "Finished the long book")
    await page.fill("#moment-at", "2026-03-14T21:30")
    await page.get_by_role("button", name="Record").click()
    days = page.locator("#moment-list .moment-day")
    await expect(days).to_have_count(2)
    await expect(days.nth(1).locator(".moment-day-label")).to_have_text("Saturday, March 14, 2026")
    await expect(days.nth(1)).to_contain_text("Finished the long book")
    await expect(days.nth(1).locator("time")).to_have_text("09:30 PM")
    await expect(page.locator("#moment-more")).to_be_hidden()  # all on one page
    await ui.shot("moments")

    await page.fill("#moment-search", "market")
    await page.get_by_role("button", name="Search").click()
    await expect(page).to_have_url(re.compile(r"/moments\?q=market$"))
    await expect(page.locator("#moment-status")).to_have_text("Best matches, by words.")
    await expect(items).to_have_count(1)
    await expect(items.first).to_contain_text("Coffee with Ana")
    await page.fill("#moment-search", "")
    await page.get_by_role("button", name="Search").click()
    await expect(items).to_have_count(2)

    await items.filter(has_text="Finished the long book").get_by_role("button", name=re.compile("^Delete")).click()
    await page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    await expect(items).to_have_count(1)
    listed = await ui.api("GET", "/moments")
    assert [m["text"] for m in listed["items"]] == ["Coffee with Ana at the <b>market</b>"]
    assert not ui.watch.errors


async def test_the_profile_tab_edits_facts_and_summary_and_forgets_observations(ui: Session, fable: Fable) -> None:
    page = ui.page
    await ui.register("pia")
    await ui.api("POST", "/profile/observations", {"text": "Prefers short answers"})
    await ui.api("POST", "/profile/observations", {"text": "Often writes late at night"})
    await page.goto("/settings/profile")
    await expect(page.get_by_role("tab", name="Profile")).to_have_attribute("aria-selected", "true")
    noticed = page.locator("#profile-observations li")
    await expect(noticed).to_have_count(2)
    await expect(noticed.first).to_contain_text("Often writes late at night")
    await expect(page.locator("#profile-summary-at")).to_contain_text("Not learned yet")

    await page.fill("#profile-facts", "I live in Lisbon\n\n  I have two cats  \n")
    await page.click("#profile-facts-save")
    await expect(page.locator("#toasts")).to_contain_text("Facts saved")
    await page.fill("#profile-summary", "Lives in Lisbon with two cats; likes it brief.")
    await page.click("#profile-summary-save")
    await expect(page.locator("#profile-summary-at")).to_contain_text("Written just now")
    await page.get_by_role("button", name="Forget: Prefers short answers").click()
    await expect(noticed).to_have_count(1)
    await page.evaluate("window.scrollTo(0, 0)")
    await ui.shot("profile")

    await page.reload()
    await expect(page.locator("#profile-facts")).to_have_value("I live in Lisbon\nI have two cats")
    await expect(page.locator("#profile-summary")).to_have_value("Lives in Lisbon with two cats; likes it brief.")
    profile = await ui.api("GET", "/profile")
    assert profile["facts"] == ["I live in Lisbon", "I have two cats"]
    assert [o["text"] for o in profile["observations"]] == ["Often writes late at night"]
    assert not ui.watch.errors
