"""Sharing in the browser: alice shares a project with bob from its page; bob, in a browser of
his own, is told by the bell, finds it under Sharing and on his projects page marked as alice's,
reads its tasks and is offered no way to change them: no edit button, the task's controls
disabled on its page and on the Tasks page."""

from __future__ import annotations

import pytest
from playwright.async_api import expect
from support.browser import Session

pytestmark = pytest.mark.browser


async def test_alice_shares_a_project_and_bob_reads_it(ui: Session, session_at, base_url: str) -> None:
    page = ui.page
    await ui.register("alice")
    project = await ui.api("POST", "/projects", {"title": "Garden"})
    task = await ui.api("POST", "/notes", {"title": "Plant tulips", "status": "todo", "project_id": project["id"]})
    async with session_at(base_url) as bobs:
        await bobs.register("bob")
        await page.goto(f"/projects/{project['id']}")
        await page.get_by_role("button", name="Share").click()
        dialog = page.get_by_role("dialog", name="Share Garden")
        await dialog.get_by_label("Share with (username or group name)").fill("bob")
        await dialog.get_by_label("Permission", exact=True).select_option("viewer")
        await dialog.get_by_role("button", name="Share", exact=True).click()
        await expect(dialog.locator("#share-list")).to_contain_text("bob")
        await ui.shot("share")
        await dialog.get_by_role("button", name="Done").click()

        await bobs.page.goto("/")
        await expect(bobs.page.locator("#bell-count")).to_have_text("1")
        await bobs.page.locator("#bell").click()
        told = bobs.page.locator("#bell-list")
        await expect(told).to_contain_text("alice shared the project \u201cGarden\u201d with you as viewer")
        await told.get_by_role("button").first.click()
        await expect(bobs.page).to_have_url(f"{base_url}/projects/{project['id']}")
        await expect(bobs.page.locator("h1")).to_contain_text("Garden")

        await bobs.page.goto("/shared")
        await expect(bobs.page.locator("#shared-with-me")).to_contain_text("Garden")
        await expect(bobs.page.locator("#shared-with-me")).to_contain_text("alice")
        await bobs.page.goto("/projects")
        await expect(bobs.page.locator(".project-card")).to_contain_text("alice\u2019s · can view")
        await bobs.page.goto(f"/notes/{task['id']}")
        await expect(bobs.page.locator("h1.note-title")).to_have_text("Plant tulips")
        await expect(bobs.page.locator("#edit-note")).to_have_count(0)
        await expect(bobs.page.get_by_role("button", name="Share")).to_have_count(0)
        # the task's state is shown, with no control a viewer would be refused (issue 38, item 6)
        panel = bobs.page.locator("#task-panel")
        for control in (panel.locator("#task-status"), panel.get_by_label("Priority"), panel.get_by_label("Due date")):
            await expect(control).to_be_disabled()
        await expect(panel.locator("#complete-task")).to_have_count(0)
        await expect(bobs.page.locator("#work-log form")).to_have_count(0)
        await bobs.page.goto("/tasks")
        line = bobs.page.locator(".task-line", has_text="Plant tulips")
        await expect(line.get_by_role("checkbox")).to_be_disabled()
        await expect(line.locator(".task-repeat")).to_be_disabled()
        await expect(line.get_by_role("button", name="Delete Plant tulips")).to_have_count(0)
        assert (await bobs.api("GET", f"/notes/{task['id']}"))["status"] == "todo"
        assert bobs.watch.errors == [] and ui.watch.errors == []
