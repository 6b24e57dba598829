"""The calendar page in a real Chromium: a month, a week and a day of events in the user's zone
(not the browser's), a click on a day or an hour to add one, the slide-over to change or delete
one occurrence or the whole series, errors said in the slide-over, and the home page's card."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from playwright.async_api import Locator, expect
from support.browser import Session

pytestmark = pytest.mark.browser

PARIS = ZoneInfo("Europe/Paris")


def _monday_after(day: date) -> date:
    return day + timedelta(days=7 - day.weekday())


async def _occurrences(ui: Session, start: date, days: int) -> list[tuple[str, str]]:
    end = start + timedelta(days=days)
    page = await ui.api("GET", "/events", {"start": start.isoformat(), "end": end.isoformat()})
    return [(i["title"], i["start"]) for i in page["items"]]


async def _title_shows(block: Locator) -> None:
    """The event's title is drawn inside its block, wide and tall enough to read."""
    outer, title = await block.bounding_box(), await block.locator(".cal-title").bounding_box()
    assert outer is not None and title is not None
    assert title["width"] >= 20 and title["height"] >= 8, title
    assert outer["y"] <= title["y"] and title["y"] + title["height"] <= outer["y"] + outer["height"] + 1, (outer, title)


async def test_a_month_of_events_and_the_slide_over(ui: Session) -> None:
    page = ui.page
    await ui.register("cleo")
    await ui.api("PUT", "/settings/timezone", {"value": "Europe/Paris"})  # the browser runs in UTC
    today = datetime.now(UTC).astimezone(PARIS).date()
    monday = _monday_after(today)  # next week's Monday: in this month's grid (six weeks) or the next one's
    series = await ui.api("POST", "/events", {"title": "Standup", "start": f"{monday}T09:00", "end": f"{monday}T09:15",
                                               "rrule": "FREQ=WEEKLY;BYDAY=MO", "location": "Room 4"})
    await ui.api("POST", "/events", {"title": "Holiday", "start": (monday + timedelta(days=3)).isoformat(),
                                     "end": (monday + timedelta(days=5)).isoformat(), "color": "#2f7a4f"})

    await page.goto(f"/calendar?view=month&date={monday}")
    await expect(page.get_by_role("link", name="Calendar")).to_have_attribute("aria-current", "page")
    day = page.locator(f'.cal-day[data-date="{monday}"]')
    await expect(day.locator(".cal-event")).to_have_text(["09:00Standup"])
    await _title_shows(day.locator(".cal-event"))
    holiday = page.locator(".cal-event.all-day", has_text="Holiday")
    await expect(holiday).to_have_count(2)  # two days, the end exclusive
    await expect(page.locator(".cal-head")).to_contain_text("Times in Europe/Paris")

    # a click on a day adds an event there
    wednesday = monday + timedelta(days=2)
    await page.locator(f'.cal-day[data-date="{wednesday}"]').click(position={"x": 60, "y": 90})
    editor = page.locator("#event-editor")
    await expect(editor).to_be_visible()
    await expect(page.locator("#event-start-date")).to_have_value(wednesday.isoformat())
    await page.fill("#event-title", "Dentist")
    await page.fill("#event-start-time", "14:00")
    await page.fill("#event-end-time", "13:00")  # before the start: the server says so, nothing is saved
    await page.click("#event-save")
    await expect(page.locator("#event-error")).to_contain_text("is before start")
    await page.fill("#event-end-time", "15:00")
    await page.fill("#event-location", "Rue de la Paix")
    await page.click("#event-save")
    await expect(editor).to_be_hidden()
    await expect(page.locator(f'.cal-day[data-date="{wednesday}"] .cal-event')).to_have_text(["14:00Dentist"])
    assert ("Dentist", f"{wednesday}T14:00+01:00") in await _occurrences(ui, wednesday, 1)
    await ui.shot("calendar")

    # one occurrence renamed, then another deleted: the series stays
    await day.locator(".cal-event").click()
    await expect(page.locator("#event-scope button[aria-pressed=true]")).to_have_text("This occurrence")
    await expect(page.locator("#event-repeat")).to_be_hidden()
    await page.fill("#event-title", "Standup (retro)")
    await ui.shot("calendar-event")
    await page.click("#event-save")
    await expect(day.locator(".cal-event")).to_have_text(["09:00Standup (retro)"])
    await page.goto(f"/calendar?view=week&date={monday + timedelta(days=7)}")
    block = page.locator(".cal-block", has_text="Standup")
    await expect(block).to_have_count(1)
    await _title_shows(block)  # a 15-minute event: its title, not only its time
    # one occurrence moved to another time alone (the form sends all_day as the series has it)
    await block.click()
    await page.fill("#event-start-time", "09:30")
    await page.fill("#event-end-time", "09:45")
    await page.click("#event-save")
    await expect(page.locator("#event-editor")).to_be_hidden()
    await expect(block).to_contain_text("09:30Standup")
    moved = monday + timedelta(days=7)
    assert ("Standup", f"{moved}T09:30+01:00") in await _occurrences(ui, moved, 1)
    await block.click()
    await page.click("#event-delete")
    await page.get_by_role("button", name="Delete", exact=True).last.click()
    await expect(page.locator(".cal-block", has_text="Standup")).to_have_count(0)
    titles = [t for t, _ in await _occurrences(ui, monday, 21)]
    assert titles.count("Standup (retro)") == 1 and titles.count("Standup") == 1  # the third week's stays

    # a click on an hour of the week adds an event at that hour
    await page.locator(f'.cal-slot[data-date="{monday + timedelta(days=8)}"][data-hour="10"]').click()
    await expect(page.locator("#event-start-time")).to_have_value("10:00")
    await page.fill("#event-title", "Focus time")
    await page.click("#event-save")
    await expect(page.locator(".cal-block", has_text="Focus time")).to_contain_text("10:00")
    await ui.shot("calendar-week")

    # the whole series: its title everywhere, then gone with its changed occurrence
    await page.goto(f"/calendar?view=day&date={monday + timedelta(days=14)}")
    await page.locator(".cal-block", has_text="Standup").click()
    await page.click('#event-scope button[data-scope="series"]')
    await expect(page.locator("#event-repeat")).to_be_visible()
    await page.fill("#event-title", "Daily standup")
    await page.click("#event-save")
    await expect(page.locator(".cal-block")).to_have_text(["09:00Daily standupRoom 4"])
    await page.locator(".cal-block").click()
    await page.click('#event-scope button[data-scope="series"]')
    await page.click("#event-delete")
    await page.get_by_role("button", name="Delete", exact=True).last.click()
    await expect(page.locator(".cal-block")).to_have_count(0)
    assert [t for t, _ in await _occurrences(ui, monday, 21) if "tandup" in t] == []
    gone = await page.request.get(f"{ui.base_url}/api/events/{series['id']}")
    assert gone.status == 404

    await ui.api("POST", "/events", {"title": "Lunch with Ada", "start": f"{today}T12:30"})
    await page.goto("/")
    card = page.locator("#upcoming")
    await expect(card.locator(".upcoming-day").first).to_have_text("Today")
    await expect(card).to_contain_text("12:30Lunch with Ada")
    assert not ui.watch.errors and not ui.watch.dialogs
