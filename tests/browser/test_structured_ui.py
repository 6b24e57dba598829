"""People and lists in Chromium: a person's fields shown as a card on the note page, a list's
items as checkboxes that check through update_list, and [[links]] reaching the person."""

from __future__ import annotations

import pytest
from playwright.async_api import expect
from support.browser import Session

from fable_core.runtime import Fable

pytestmark = pytest.mark.browser


async def test_a_person_shows_a_card_and_a_list_checks_its_items(ui: Session, fable: Fable) -> None:
    page = ui.page
    await ui.register("lena")
    ada = await ui.api("POST", "/people", {"person": "Ada Lovelace", "body": "Met at the engine club.", "fields": {
        "email": "ada@example.org", "organisation": "Analytical Engines", "phone": "+44 20 7946 0000"}})
    made = await ui.api("POST", "/lists", {"title": "Shopping", "items": ["Milk", "Eggs", "<b>Bread</b>"],
                                           "body": "For [[Ada Lovelace]]'s visit."})

    await page.goto(f"/notes/{ada['id']}")
    card = page.locator("#entity-card")
    await expect(page.locator("#note-kind")).to_have_text("person")
    await expect(card.locator("dd[data-field=email] a")).to_have_attribute("href", "mailto:ada@example.org")
    await expect(card.locator("dd[data-field=organisation]")).to_have_text("Analytical Engines")
    await expect(page.locator("#convert-note")).to_have_count(0)

    await page.goto(f"/notes/{made['id']}")
    boxes = page.locator("#checklist input[type=checkbox]")
    await expect(boxes).to_have_count(3)
    await expect(page.locator("#checklist")).to_contain_text("3 of 3 open")
    assert await page.locator("#checklist b").count() == 0  # item text is never HTML
    await boxes.nth(1).check()
    await expect(page.locator("#checklist")).to_contain_text("2 of 3 open")
    await expect(page.locator("#checklist s")).to_have_text("Eggs")
    await ui.shot("structured-list")
    listed = await ui.api("GET", f"/lists/{made['id']}")
    assert [i["checked"] for i in listed["items"]] == [False, True, False] and listed["version"] == 2

    await page.locator("#note-body a", has_text="Ada Lovelace").click()
    await expect(page.locator("#entity-card")).to_be_visible()
    assert not ui.watch.errors
