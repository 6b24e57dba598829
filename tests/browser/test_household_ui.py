"""A household's shared project in Chromium (issue 38, items 5 and 8): alice puts notes in the
project from its page (a new one, and an existing one through the note picker), moves a note
between projects from its own page, and assigns a task to bob; bob sees it on his Today and
Tasks, alice's agenda does not, until she asks for everyone's. At 1280 px the task rows' repeat
chip and priority badge do not overlap, and the board's four columns are all on screen."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from playwright.async_api import expect
from support.browser import Session

pytestmark = pytest.mark.browser


def _today() -> str:
    return datetime.now(UTC).date().isoformat()


def _overlap(a: dict, b: dict) -> bool:
    return a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"] \
        and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"]


async def test_a_shared_household_project_holds_notes_and_assigned_tasks(ui: Session, session_at,
                                                                         base_url: str) -> None:
    page = ui.page
    await ui.register("alice")
    async with session_at(base_url) as bobs:
        await bobs.register("bob")
        home = await ui.api("POST", "/projects", {"title": "Home"})
        await ui.api("POST", "/shares", {"project_id": home["id"], "with_user": "bob", "permission": "editor"})
        for title in ("Kitchen", "Garden", "Attic"):
            await ui.api("POST", f"/projects/{home['id']}/milestones", {"title": title})
        recipes = await ui.api("POST", "/notes", {"title": "Recipes", "body": "Soup"})
        bins = await ui.api("POST", "/notes", {"title": "Take out the bins", "due_date": _today(), "priority": "high",
                                               "recurrence_rule": "FREQ=WEEKLY;BYDAY=MO,TH", "project_id": home["id"]})

        # a new note from the project's page is in the project
        await page.goto(f"/projects/{home['id']}")
        await expect(page.locator("#project-notes")).to_contain_text("No notes in this project yet")
        await page.locator("#new-project-note").click()
        await expect(page.locator("#new-note-project")).to_contain_text("Home")
        await page.locator(".title-input").fill("Shopping list")
        await page.locator("#note-source").fill("- milk")
        await page.locator("#save-note").click()
        await expect(page.locator("h1.note-title")).to_have_text("Shopping list")
        await expect(page.locator("#note-project")).to_have_value(str(home["id"]))
        shopping = int(page.url.rsplit("/", 1)[1])
        assert (await ui.api("GET", f"/notes/{shopping}"))["project_id"] == home["id"]

        # an existing note joins it through the note picker; focus comes back to the button
        await page.goto(f"/projects/{home['id']}")
        await page.locator("#add-existing-note").click()
        picker = page.get_by_role("combobox", name="Add a note to this project")
        await expect(picker).to_be_focused()
        await picker.fill("Recipes")
        await expect(page.locator(".switcher-item").first).to_contain_text("Recipes")
        await page.keyboard.press("Enter")
        await expect(page.locator("#project-notes")).to_contain_text("Recipes")
        await expect(page.locator("#project-notes")).to_contain_text("Shopping list")
        await expect(page.locator("#add-existing-note")).to_be_focused()
        assert (await ui.api("GET", f"/notes/{recipes['id']}"))["project_id"] == home["id"]

        # a note's own page moves it out of the project, keeping focus on the control
        await page.goto(f"/notes/{recipes['id']}")
        await page.locator("#note-project").select_option("")
        await expect(page.locator("#note-project")).to_be_focused()
        await expect(page.locator("#note-project")).to_have_value("")
        assert (await ui.api("GET", f"/notes/{recipes['id']}")).get("project_id") is None

        # the task of a shared project is assigned to bob from its page
        await page.goto(f"/notes/{bins['id']}")
        assignee = page.locator("#task-assignee")
        await expect(assignee.locator("option")).to_have_text(["Nobody", "alice", "bob"])
        await assignee.select_option("bob")
        await expect(page.locator("#task-assignee")).to_be_focused()
        await expect(page.locator("#task-assignee")).to_have_value("bob")
        assert (await ui.api("GET", f"/notes/{bins['id']}"))["assignee"] == "bob"

        # alice's Today and Tasks leave it out; "Everyone" (kept in the address) shows it, with bob's chip
        await page.goto("/")
        await expect(page.get_by_text("Nothing due.")).to_be_visible()  # the agenda is drawn, without bob's chore
        await expect(page.get_by_text("Take out the bins")).to_have_count(0)
        await page.goto("/tasks")
        await expect(page.locator("#task-groups")).to_contain_text("No tasks here")
        await page.locator("select.filter-assignee").select_option("everyone")
        await expect(page).to_have_url(re.compile(r"assignee=everyone"))
        line = page.locator(".task-line", has_text="Take out the bins")
        await expect(line.get_by_role("img", name="Assigned to bob")).to_have_text("BO")

        # 1280 px: the repeat chip and the priority badge keep apart
        repeat = await line.locator(".task-repeat").bounding_box()
        badge = await line.locator(".badge").bounding_box()
        assert repeat and badge and not _overlap(repeat, badge), (repeat, badge)
        await ui.shot("household-tasks")

        # the board: four columns in view; "My tasks" leaves bob's out
        await page.goto(f"/projects/{home['id']}")
        columns = page.locator("#board .column")
        await expect(columns).to_have_count(4)
        width = page.viewport_size["width"]
        board = await page.locator("#board").bounding_box()
        assert board is not None
        right = min(width, board["x"] + board["width"]) + 0.5
        for i in range(4):
            box = await columns.nth(i).bounding_box()
            assert box and box["x"] >= board["x"] and box["x"] + box["width"] <= right, box
        card = page.locator(f"[data-task='{bins['id']}']")
        await expect(card.get_by_role("img", name="Assigned to bob")).to_be_visible()
        await page.locator("#board-assignee").select_option("me")
        await expect(page).to_have_url(re.compile(r"assignee=me"))
        await expect(page.locator(f"[data-task='{bins['id']}']")).to_have_count(0)
        await expect(page.locator("#board-assignee")).to_be_focused()
        await ui.shot("household-board")

        # bob sees it on his Today and in his Tasks
        await bobs.page.goto("/")
        await expect(bobs.page.get_by_text("Take out the bins")).to_be_visible()
        await bobs.page.goto("/tasks")
        mine = bobs.page.locator(".task-group[data-group='today'] .task-line", has_text="Take out the bins")
        await expect(mine.get_by_role("img", name="Assigned to bob")).to_be_visible()
        await bobs.page.goto(f"/projects/{home['id']}?assignee=me")
        await expect(bobs.page.locator(f"[data-task='{bins['id']}']")).to_be_visible()
        assert ui.watch.errors == [] and bobs.watch.errors == []
