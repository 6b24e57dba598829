"""The Tasks page in Chromium: a recurring task created by quick add (previewed as chips), "Create
anyway" on a similar title, undo of a completion and of a deletion (the trash), and the trash page."""

from __future__ import annotations

import pytest
from playwright.async_api import expect
from support.browser import Session

pytestmark = pytest.mark.browser


async def test_quick_add_makes_a_recurring_task_and_a_similar_title_asks(ui: Session) -> None:
    page = ui.page
    await ui.register("tess")
    await page.goto("/tasks")
    await page.fill("#new-task", "pay rent every month on the 1st p1 #home")
    preview = page.locator("#quick-preview")
    for chip in ("↻ monthly on the 1st", "high", "#home"):
        await expect(preview).to_contain_text(chip)
    await page.keyboard.press("Enter")
    row = page.locator(".task-line", has_text="pay rent")
    await expect(row.locator(".task-repeat")).to_contain_text("monthly on the 1st · next")
    await expect(row.locator(".badge")).to_have_text("high")
    await ui.shot("tasks-quick-add")
    (stored,) = (await ui.api("GET", "/notes", {"kind": "task"}))["items"]
    assert (stored["recurrence_rule"], stored["priority"], stored["tags"]) == (
        "FREQ=MONTHLY;BYMONTHDAY=1", "high", ["home"])

    await page.fill("#new-task", "pay rents every month on the 1st")
    await page.keyboard.press("Enter")
    notice = page.locator("#similar-notice")
    await expect(notice).to_contain_text("A similar task exists: pay rent")
    await expect(notice.get_by_role("link", name="Open it")).to_have_attribute("href", f"/notes/{stored['id']}")
    assert "create_note" not in (await notice.text_content() or "")
    await page.click("#create-anyway")
    await expect(page.locator(".task-line", has_text="pay rents")).to_be_visible()
    await expect(notice).to_be_hidden()
    assert not ui.watch.errors and not ui.watch.dialogs


async def test_completing_and_deleting_can_be_undone(ui: Session) -> None:
    page = ui.page
    await ui.register("uma")
    task = await ui.api("POST", "/notes", {"title": "Water the ferns", "status": "todo"})
    await ui.api("POST", "/notes", {"title": "Sweep the porch", "status": "todo"})
    await page.goto("/tasks")
    row = page.locator("[data-group=no_date] .task-line", has_text="Water the ferns")
    await row.get_by_role("checkbox").check()
    await expect(page.locator("[data-group=recently_done]")).to_contain_text("Water the ferns")
    await page.locator(".toast", has_text="Completed").get_by_role("button", name="Undo").click()
    await expect(page.locator("[data-group=no_date]")).to_contain_text("Water the ferns")
    assert (await ui.api("GET", f"/notes/{task['id']}"))["status"] == "todo"

    delete = page.get_by_role("button", name="Delete Sweep the porch")
    await delete.click()
    await expect(page.locator(".task-line", has_text="Sweep the porch")).to_have_count(0)
    await page.locator(".toast", has_text="trash").get_by_role("button", name="Undo").click()
    await expect(page.locator(".task-line", has_text="Sweep the porch")).to_be_visible()

    await delete.click()
    await expect(page.locator(".task-line", has_text="Sweep the porch")).to_have_count(0)
    await page.goto("/notes")
    await page.click("#trash-link")
    await expect(page.locator(".trash-item")).to_contain_text("Sweep the porch")
    await ui.shot("trash")
    await page.locator(".trash-item", has_text="Sweep the porch").get_by_role("button", name="Restore").click()
    await expect(page.locator(".trash-list")).to_contain_text("The trash is empty.")
    assert not ui.watch.errors and not ui.watch.dialogs
