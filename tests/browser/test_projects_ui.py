"""Projects in Chromium: cards dragged between milestones and moved with Alt+arrows, editing
(title, colour), archiving (hidden until "Show archived"), deleting a milestone and a project
(saying what happens to their tasks), and the workspace (tasks, a chat scoped to the project,
notes side by side)."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import expect
from support.browser import Session
from support.fake_llm import FakeLLM, Reply

pytestmark = pytest.mark.browser


async def _kitchen(ui: Session) -> tuple[dict, dict, dict, dict]:
    project = await ui.api("POST", "/projects", {"title": "Kitchen", "goal": "A kitchen we like cooking in"})
    plan = await ui.api("POST", f"/projects/{project['id']}/milestones", {"title": "Plan"})
    build = await ui.api("POST", f"/projects/{project['id']}/milestones", {"title": "Build"})
    task = await ui.api("POST", "/notes", {"title": "Measure the walls", "status": "todo", "milestone_id": plan["id"]})
    await ui.api("POST", "/notes", {"title": "Worktop ideas", "body": "Oak or stone?", "project_id": project["id"]})
    return project, plan, build, task


async def test_cards_move_by_drag_and_drop_and_by_keyboard(ui: Session) -> None:
    page = ui.page
    await ui.register("kim")
    project, plan, build, task = await _kitchen(ui)
    await page.goto(f"/projects/{project['id']}")
    card = page.locator(f"[data-task='{task['id']}']")
    build_column = page.get_by_role("region", name="Build")
    await expect(page.get_by_role("region", name="Plan").locator(card)).to_be_visible()
    await expect(page.locator("#project-notes")).to_contain_text("Worktop ideas")

    await card.drag_to(build_column)
    await expect(build_column.locator(f"[data-task='{task['id']}']")).to_be_visible()
    assert (await ui.api("GET", f"/notes/{task['id']}"))["milestone_id"] == build["id"]

    await card.focus()
    await page.keyboard.press("Alt+ArrowLeft")
    await expect(page.get_by_role("region", name="Plan").locator(f"[data-task='{task['id']}']")).to_be_focused()
    await page.keyboard.press("Alt+ArrowLeft")
    await expect(page.get_by_role("region", name="No milestone").locator(f"[data-task='{task['id']}']")).to_be_focused()
    assert (await ui.api("GET", f"/notes/{task['id']}")).get("milestone_id") is None
    await page.keyboard.press("Alt+ArrowRight")
    await expect(page.get_by_role("region", name="Plan").locator(f"[data-task='{task['id']}']")).to_be_focused()
    assert (await ui.api("GET", f"/notes/{task['id']}"))["milestone_id"] == plan["id"]
    await expect(page.locator("#board-status")).to_have_text("Moved “Measure the walls” to Plan")
    await ui.shot("project-board")
    assert not ui.watch.errors


async def test_edit_archive_and_delete_a_project_and_a_milestone(ui: Session) -> None:
    page = ui.page
    await ui.register("kim")
    project, _, _, task = await _kitchen(ui)
    await page.goto(f"/projects/{project['id']}")

    await page.locator("#edit-project").click()
    dialog = page.get_by_role("dialog")
    await dialog.locator("#project-title").fill("New kitchen")
    await dialog.get_by_label("Green").check()
    await dialog.locator("#project-save").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text("New kitchen")
    fresh = await ui.api("GET", f"/projects/{project['id']}")
    assert (fresh["title"], fresh["color"]) == ("New kitchen", "#3a7d5c")

    await page.get_by_role("button", name="Delete Plan").click()
    await expect(page.get_by_role("dialog")).to_contain_text("Its 1 task stay in the project, without milestone.")
    await page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    await expect(page.get_by_role("region", name="No milestone")).to_contain_text("Measure the walls")
    assert [m["title"] for m in (await ui.api("GET", f"/projects/{project['id']}"))["milestones"]] == ["Build"]

    await page.locator("#archive-project").click()
    await expect(page.locator(".archived-badge")).to_be_visible()
    await page.goto("/projects")
    await expect(page.locator("#project-cards")).to_contain_text("No active projects.")
    await page.get_by_label("Show archived").check()
    await page.locator(".project-card", has_text="New kitchen").click()

    await page.locator("#delete-project").click()
    await expect(page.get_by_role("dialog")).to_contain_text("Its 2 notes and tasks:")
    await page.locator("#delete-keep-notes").click()
    await page.wait_for_url("**/projects")
    kept = await ui.api("GET", f"/notes/{task['id']}")
    assert kept.get("project_id") is None and kept["title"] == "Measure the walls"
    assert (await ui.api("GET", "/projects"))["items"] == []
    assert not ui.watch.errors and not ui.watch.dialogs


async def test_the_workspace_shows_tasks_notes_and_a_chat_scoped_to_the_project(
        chat_ui: Session, chat_llm: FakeLLM) -> None:
    page = chat_ui.page
    await chat_ui.register("kim")
    project, _, _, _ = await _kitchen(chat_ui)
    chat_llm.replies.append(Reply("Measure **first**."))
    await page.goto(f"/projects/{project['id']}")
    await page.locator("#open-workspace").click()
    await expect(page.locator("#workspace-tasks")).to_contain_text("Measure the walls")
    await expect(page.locator("#workspace-notes")).to_contain_text("Worktop ideas")
    await page.fill("#chat-input", "Where do I start?")
    await page.press("#chat-input", "Enter")
    await expect(page.locator(".msg-assistant[data-rendered=true] strong")).to_have_text("first")
    await expect(page).to_have_url(re.compile(rf"/projects/{project['id']}/workspace$"))
    [conversation] = (await chat_ui.api("GET", "/chat/conversations"))["items"]
    assert conversation["rag_project_id"] == project["id"]
    await chat_ui.shot("project-workspace")

    await page.reload()  # the project's conversation comes back
    await expect(page.locator(".msg-user")).to_contain_text("Where do I start?")
    assert not chat_ui.watch.errors
