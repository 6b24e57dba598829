"""The web UI in a real Chromium against a real server: the flows a person uses it for.

Each test leaves screenshots of the pages it visits in docs/screenshots (the README shows them).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from playwright.async_api import expect
from support.browser import Session
from support.mcp_clients import as_a_host_starts
from support.users import PASSWORD

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_core.tools.toolsets import ToolChoice

pytestmark = pytest.mark.browser


async def test_register_link_backlink_then_make_the_note_a_task_and_complete_it(ui: Session) -> None:
    page = ui.page
    await page.goto("/")
    await expect(page).to_have_url(re.compile(r"/login\?next=%2F$"))
    # an empty instance opens on its first account's form (issue 37): the tab is already chosen
    await expect(page.get_by_role("heading", level=1)).to_have_text("Create the first account")
    tab = page.get_by_role("group", name="Sign in or create an account").get_by_role("button", name="Create account")
    await expect(tab).to_have_attribute("aria-pressed", "true")
    await page.fill("#username", "ada")
    await page.fill("#password", PASSWORD)
    await ui.shot("login")
    await page.locator("form button[type=submit]").click()
    await expect(page.get_by_role("heading", level=1)).to_contain_text("ada")

    await page.keyboard.press("n")
    await page.wait_for_url("**/notes/new")
    await page.fill(".title-input", "Garden plan")
    await page.fill("#note-source", "# Beds\n\nTomatoes go in the sunny bed.")
    await page.fill("#tag-input", "home")
    await page.keyboard.press("Enter")
    await page.click("#save-note")
    await page.wait_for_url(re.compile(r"/notes/\d+$"))
    target_url = page.url

    await page.keyboard.press("n")
    await page.wait_for_url("**/notes/new")
    await page.fill(".title-input", "Weekly review")
    await page.locator("#tag-input").press_sequentially("ho")
    await page.locator(".suggest li", has_text="#home").click()
    await expect(page.locator(".tag-input .chip")).to_have_text(["#home×"])
    source = page.locator("#note-source")
    await source.click()
    await source.press_sequentially("Check [[Gard")
    suggestion = page.locator(".suggest li", has_text="Garden plan")
    await expect(suggestion).to_be_visible()
    await source.press("Enter")
    await source.press_sequentially(" before Friday.")
    await expect(source).to_have_value("Check [[Garden plan]] before Friday.")
    await expect(page.locator("#preview a.wikilink")).to_have_text("Garden plan")
    await ui.shot("editor")
    await page.click("#save-note")

    link = page.locator("#note-body a.wikilink")
    await expect(link).to_have_attribute("href", target_url.removeprefix(ui.base_url))
    await link.click()
    await page.wait_for_url(target_url)
    backlink = page.locator("#backlinks a", has_text="Weekly review")
    await expect(backlink).to_be_visible()
    await expect(page.locator("#backlinks")).to_contain_text("Check Garden plan before Friday.")  # as plain text
    await ui.shot("note")
    await page.emulate_media(color_scheme="dark")
    await ui.shot("note-dark")
    await page.emulate_media(color_scheme="light")

    await backlink.click()
    await page.click("#convert-note")
    await expect(page.locator("#task-panel")).to_be_visible()
    await expect(page.locator("#task-status")).to_have_value("todo")
    await page.fill("#new-subtask", "Clear the beds")
    await page.keyboard.press("Enter")
    await expect(page.locator("#subtasks .task")).to_contain_text("Clear the beds")
    await page.fill("#log-minutes", "25")
    await page.fill("#log-what", "Walked the garden")
    await page.keyboard.press("Enter")
    await expect(page.locator("#work-log")).to_contain_text("25 min")
    await expect(page.locator("#work-log")).to_contain_text("Walked the garden")
    await page.click("#complete-task")
    await expect(page.locator("#task-status")).to_have_value("done")
    note_id = int(page.url.rsplit("/", 1)[1])
    stored = await ui.api("GET", f"/notes/{note_id}")
    assert stored["status"] == "done" and stored["completed_at"] and stored["tags"] == ["home"]

    await page.get_by_role("link", name="Tasks").click()
    done = page.locator("[data-group=recently_done]")
    await expect(done.locator(".task-line.done")).to_contain_text("Weekly review")
    await page.fill("#new-task", "Water the seedlings 2031-05-04 p1")  # quick add reads the date and priority
    await expect(page.locator("#quick-preview")).to_contain_text("high")
    await page.keyboard.press("Enter")
    row = page.locator("[data-group=upcoming] .task-line", has_text="Water the seedlings")
    await expect(row.locator(".badge")).to_have_text("high")
    await ui.shot("tasks")
    seedlings = (await ui.api("GET", "/notes", {"text": "seedlings"}))["items"]
    assert [(t["title"], t["priority"], t["due_date"]) for t in seedlings] == [
        ("Water the seedlings", "high", "2031-05-04")]
    await row.get_by_role("checkbox").check()
    done_now = page.locator("[data-group=recently_done] .task-line.done", has_text="Water the seedlings")
    await expect(done_now).to_be_visible()
    assert (await ui.api("GET", f"/notes/{seedlings[0]['id']}"))["status"] == "done"
    assert not ui.watch.errors and not ui.watch.dialogs


async def test_api_key_is_shown_once_with_its_mcp_config(ui: Session, fable: Fable, tmp_path: Path) -> None:
    page = ui.page
    await ui.register("grace")
    await page.goto("/settings/keys")
    await page.fill("#key-name", "Claude Desktop")
    await page.click("#api-keys button[type=submit]")
    key = (await page.locator("#new-key-value").text_content()) or ""
    assert re.fullmatch(r"fable_\w+_\S+", key)
    await expect(page.locator("#new-key pre").first).to_contain_text(key)
    await expect(page.locator("#api-keys tbody")).to_contain_text("Claude Desktop")
    await ui.shot("settings")

    pasted = json.loads(await page.locator("#new-key pre").nth(1).text_content() or "")  # "Claude Desktop ..."
    who = await page.request.get(f"{ui.base_url}/api/auth/me",
                                 headers={"Authorization": f"Bearer {key}"})
    user = (await who.json())["user"]
    assert who.ok and user["username"] == "grace"
    grace = Caller(user_id=user["id"], username="grace", role=user["role"])  # what she is offered
    default = ToolChoice(["default"])  # what the form chose for it, as it stands
    async with as_a_host_starts(pasted, tmp_path) as client:
        assert [t.name for t in (await client.list_tools()).tools] == [  # what her key is offered
            t.name for t in fable.registry.for_agents(replace(grace, credential="key"), fable.availability)
            if default.offers(t)]

    await page.reload()
    await expect(page.locator("#api-keys tbody")).to_contain_text("Claude Desktop")
    assert await page.locator("#new-key").count() == 0
    assert key not in await page.content()

    await page.get_by_role("tab", name="Account").click()
    card = page.locator("#password-card")
    await card.get_by_label("Current password").fill(PASSWORD)
    await card.get_by_label("New password").fill("an even calmer password")
    await card.get_by_role("button", name="Change password").click()
    await expect(page.locator(".toast")).to_contain_text("Password changed")
    await expect(card.get_by_label("Current password")).to_have_value("")
    login = await page.request.post(f"{ui.base_url}/api/auth/login", headers={"Origin": ui.base_url},
                                    data={"username": "grace", "password": "an even calmer password"})
    assert login.status == 200
    assert not ui.watch.errors


HOSTILE = """Nothing here may run.

<script>window.__pwned = "script"</script>
<img src="/nope.png" onerror="window.__pwned = 'onerror'">
<svg onload="window.__pwned = 'svg'"><circle r="4"/></svg>
<a id="js-link" href="javascript:window.__pwned='href'">a javascript: link</a>
[md link](javascript:window.__pwned='md')
<iframe src="javascript:window.__pwned='iframe'"></iframe>
<details open ontoggle="window.__pwned = 'toggle'"><summary>more</summary>hidden</details>
"""


async def test_a_note_holding_script_or_event_handlers_runs_nothing(ui: Session) -> None:
    page = ui.page
    await ui.register("mallory")
    note = await ui.api("POST", "/notes", {
        "title": '<img src=x onerror="window.__pwned=\'title\'">', "body": HOSTILE,
    })
    await page.goto(f"/notes/{note['id']}")
    body = page.locator("#note-body")
    await expect(body).to_contain_text("Nothing here may run.")
    await expect(page.locator("h1.note-title")).to_have_text(note["title"])
    await page.locator("#js-link, #note-body a", has_text="a javascript: link").click()
    await page.click("#edit-note")
    await expect(page.locator("#preview")).to_contain_text("Nothing here may run.")

    assert await page.evaluate("window.__pwned") is None
    assert await page.locator("#note-body script, #note-body iframe, #preview script").count() == 0
    handlers = await page.evaluate(
        "[...document.querySelectorAll('#note-body *, #preview *, h1 *')]"
        ".flatMap(e => [...e.attributes].map(a => a.name)).filter(n => n.startsWith('on'))")
    assert handlers == []
    hrefs = await page.evaluate("[...document.querySelectorAll('#note-body a')].map(a => a.href)")
    assert not [h for h in hrefs if h.lower().startswith("javascript:")]
    assert ui.watch.dialogs == []
    assert ui.watch.errors == []  # not even an attempt the Content-Security-Policy had to block


async def test_keyboard_shortcuts_search_and_tag_filter(ui: Session) -> None:
    page = ui.page
    await ui.register("lin")
    for title, tags in (("Compost notes", ["garden"]), ("Tax receipts", ["admin"]),
                        ("Seed catalogue", ["garden", "shopping"])):
        await ui.api("POST", "/notes", {"title": title, "body": f"About {title.lower()}.", "tags": tags})
    await page.goto("/notes")
    await expect(page.get_by_role("heading", name="Notes")).to_be_visible()
    await page.keyboard.press("?")
    await expect(page.get_by_role("dialog")).to_contain_text("Focus search")
    await page.keyboard.press("Escape")
    await page.locator(".chip", has_text="#garden").click()
    items = page.locator("ul.list .note-item .title")
    await expect(items).to_have_text(["Seed catalogue", "Compost notes"])
    await ui.shot("notes")
    await page.keyboard.press("/")
    await expect(page.locator("#search")).to_be_focused()
    await page.keyboard.type("receipts")
    await page.keyboard.press("Enter")
    await expect(items).to_have_text(["Tax receipts"])
    await expect(page.locator(".snippet mark").first).to_have_text(re.compile("receipt", re.IGNORECASE))

    await items.first.click()
    await page.click("#edit-note")
    await page.fill("#note-source", "Shredded them all.")
    await page.keyboard.press("Control+s")
    await expect(page.locator("#note-body")).to_have_text("Shredded them all.")
    await page.locator("#history button", has_text="Compare").click()
    await expect(page.locator("#history-detail .diff .del")).to_contain_text("About tax receipts.")
    await page.locator("#history-detail button", has_text="Restore v1").click()
    await page.get_by_role("dialog").get_by_role("button", name="Restore").click()
    await expect(page.locator("#note-body")).to_have_text("About tax receipts.")
    await expect(page.locator("#history .version")).to_have_count(3)
    assert not ui.watch.errors


async def test_project_board_advances_tasks_and_home_fits_a_phone(ui: Session) -> None:
    page = ui.page
    await ui.register("kim")
    project = await ui.api("POST", "/projects", {"title": "Kitchen", "goal": "A kitchen we like cooking in",
                                                 "color": "#3a7d5c"})
    plan = await ui.api("POST", f"/projects/{project['id']}/milestones", {"title": "Plan"})
    await ui.api("POST", f"/projects/{project['id']}/milestones", {"title": "Build"})
    task = await ui.api("POST", "/notes", {"title": "Measure the walls", "status": "todo",
                                           "milestone_id": plan["id"], "priority": "high"})
    await ui.api("POST", "/notes", {"title": "Pick a worktop", "status": "todo", "milestone_id": plan["id"],
                                    "due_date": "2030-01-15"})
    await ui.api("POST", "/notes", {"title": "Call the plumber", "status": "todo", "priority": "medium"})
    await ui.api("POST", "/notes", {"title": "Bread recipe", "body": "Flour, water, salt.", "tags": ["food"]})

    await page.goto(f"/projects/{project['id']}")
    build = page.get_by_role("region", name="Build")
    card = page.locator(f"[data-task='{task['id']}']")
    await expect(card).to_contain_text("Measure the walls")
    await card.get_by_role("button", name="→ Build").click()
    await expect(build.locator(f"[data-task='{task['id']}']")).to_be_visible()
    assert (await ui.api("GET", f"/notes/{task['id']}"))["milestone_id"] != plan["id"]
    await ui.shot("project")
    await build.locator(f"[data-task='{task['id']}']").get_by_role("button", name="✓ Done").click()
    await expect(build.locator(f"[data-task='{task['id']}'].done")).to_be_visible()

    await page.get_by_role("link", name="Home").click()
    await expect(page.locator("[data-group=no_date]")).to_contain_text("Call the plumber")
    await page.fill("#capture", "Buy flour. The good kind from the market.")
    await page.keyboard.press("Enter")
    await expect(page.locator(".card", has_text="Recent notes")).to_contain_text("Buy flour.")
    await ui.shot("home")
    await page.set_viewport_size({"width": 390, "height": 844})
    await ui.shot("home-phone")
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390
    assert not ui.watch.errors
