"""The Tasks page in Chromium: a recurring task created by quick add (previewed as chips), a chore
added twice, undo of a completion and of a deletion (the trash), and the trash page."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from playwright.async_api import expect
from support.browser import Session

pytestmark = pytest.mark.browser


async def test_quick_add_makes_a_recurring_task_and_a_chore_may_repeat(ui: Session) -> None:
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

    # a chore repeats: the same title again is a second task, never a question (issue 38, item 3)
    for _ in range(2):
        await page.fill("#new-task", "call mom")
        await page.keyboard.press("Enter")
    await expect(page.locator(".task-line", has_text="call mom")).to_have_count(2)
    await expect(page.locator("#similar-notice")).to_be_hidden()
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


async def test_quick_add_never_drops_a_task_for_its_project(ui: Session) -> None:
    """Issue 38, item 3: a project of several words is read whole; a project nobody has is
    offered for creation, or the task is added without one; nothing typed is lost."""
    page = ui.page
    await ui.register("ivy")
    kitchen = await ui.api("POST", "/projects", {"title": "Kitchen renovation"})
    await page.goto("/tasks")
    await page.fill("#new-task", "call the electrician +Kitchen renovation")
    await expect(page.locator("#quick-preview")).to_contain_text("+Kitchen renovation")
    await page.keyboard.press("Enter")
    await expect(page.locator(".task-line", has_text="call the electrician")).to_be_visible()

    await page.fill("#new-task", "prune the roses +Garden")
    await page.keyboard.press("Enter")
    notice = page.locator("#similar-notice")
    await expect(notice).to_contain_text("You have no project Garden.")
    await page.click("#create-project")
    await expect(page.locator(".task-line", has_text="prune the roses")).to_be_visible()
    await expect(notice).to_be_hidden()

    await page.fill("#new-task", "mend the fence +Shed")
    await page.keyboard.press("Enter")
    await page.click("#without-project")
    await expect(page.locator(".task-line", has_text="mend the fence")).to_be_visible()

    tasks = {t["title"]: t for t in (await ui.api("GET", "/notes", {"kind": "task"}))["items"]}
    projects = {p["title"]: p["id"] for p in (await ui.api("GET", "/projects"))["items"]}
    assert tasks["call the electrician"]["project_id"] == kitchen["id"]
    assert tasks["prune the roses"]["project_id"] == projects["Garden"]
    assert tasks["mend the fence"].get("project_id") is None and "Shed" not in projects
    assert not ui.watch.errors


async def test_home_captures_a_task_with_its_date_without_a_model(ui: Session) -> None:
    """Issue 38, item 3: with no model, a task captured on Home is read as quick add reads it."""
    page = ui.page
    await ui.register("hal")
    await page.goto("/")
    await page.get_by_role("button", name="Task", exact=True).click()
    await page.fill("#capture", "buy batteries tomorrow p2")
    await page.keyboard.press("Enter")
    await expect(page.locator(".toast", has_text="Saved")).to_contain_text("buy batteries")
    (task,) = (await ui.api("GET", "/notes", {"kind": "task"}))["items"]
    zone = (await ui.api("GET", "/settings/timezone"))["value"]
    tomorrow = datetime.now(UTC).astimezone(ZoneInfo(zone)).date() + timedelta(days=1)
    assert (task["title"], task["due_date"], task["priority"]) == ("buy batteries", tomorrow.isoformat(), "medium")
    assert not ui.watch.errors


async def test_the_tasks_page_keeps_its_place(ui: Session) -> None:
    """Issue 38, item 8: filters survive a reload (they are in the address), and ticking a task
    keeps the groups opened with "Show more" open and the keyboard focus in the list."""
    page = ui.page
    await ui.register("kim")
    for n in range(30):
        await ui.api("POST", "/notes", {"title": f"Chore {n:02}", "status": "todo", "tags": ["home"]})
    await ui.api("POST", "/notes", {"title": "Office chore", "status": "todo", "tags": ["work"]})
    await page.goto("/tasks")
    await page.locator("select.filter-tag").select_option("home")
    await expect(page).to_have_url(f"{ui.base_url}/tasks?tag=home")
    await page.reload()
    await expect(page.locator("select.filter-tag")).to_have_value("home")
    group = page.locator("[data-group=no_date]")
    await expect(group.locator(".task-line")).to_have_count(25)
    await expect(page.locator(".task-line", has_text="Office chore")).to_have_count(0)

    await group.get_by_role("button", name=re.compile(r"Show more")).click()
    await expect(group.locator(".task-line")).to_have_count(30)
    ticked, after = [await group.locator(".task-line .task-title").nth(n).text_content() for n in (3, 4)]
    box = group.locator(".task-line").nth(3).get_by_role("checkbox")
    await box.focus()
    await page.keyboard.press("Space")
    await expect(page.locator("[data-group=recently_done]")).to_contain_text(ticked or "?")
    await expect(page.locator("[data-group=no_date] .task-line")).to_have_count(29), "the opened group stays open"
    focused = await page.evaluate("document.activeElement?.closest('.task-line')?.querySelector('.task-title')"
                                  "?.textContent || ''")
    assert focused == after, focused  # the next task's checkbox: ticking on goes on down the list
    assert not ui.watch.errors


async def test_on_a_phone_the_quick_add_is_wide_and_every_target_is_24_px(ui: Session) -> None:
    """Issue 38, item 9: at 390 px the task's words get the width, and a row's checkbox and delete
    are at least 24 x 24 px (WCAG 2.5.8)."""
    page = ui.page
    await ui.register("pia")
    await ui.api("POST", "/notes", {"title": "Water the plants", "status": "todo"})
    await page.set_viewport_size({"width": 390, "height": 844})
    await page.goto("/tasks")
    line = page.locator(".task-line", has_text="Water the plants")
    await expect(line).to_be_visible()
    field = await page.locator("#new-task").bounding_box()
    assert field is not None and field["width"] >= 250, field
    for target in (line.get_by_role("checkbox"), line.get_by_role("button", name="Delete Water the plants")):
        box = await target.bounding_box()
        assert box is not None and box["width"] >= 24 and box["height"] >= 24, box
    assert await page.evaluate("document.documentElement.scrollWidth") <= 390
    assert not ui.watch.errors
