"""The bell and the service worker in a real Chromium: the unread count, the panel (text only),
a click that marks read and opens what it is about, mark all read; a pushed message shown by
/sw.js (delivered through CDP: Chromium cannot subscribe to a real push service here)."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from playwright.async_api import expect
from support.browser import Session
from support.pace import scaled

from fable_core.people.notifications.notify import add_notifications
from fable_core.people.notifications.sender import message
from fable_core.runtime import Fable

pytestmark = pytest.mark.browser


async def _tell(fable: Fable, user_id: int, kind: Any, title: str, **options: Any) -> None:
    async with fable.db.transaction() as session:
        await add_notifications(session, [user_id], kind, title, **options)


async def test_the_bell_counts_lists_and_marks_read(ui: Session, fable: Fable) -> None:
    page = ui.page
    await ui.register("nia")
    me = (await ui.api("GET", "/auth/me"))["user"]
    task = await ui.api("POST", "/notes", {"title": "Call the dentist", "status": "todo"})
    await _tell(fable, me["id"], "share", "<b>bob</b> shared the project Garden with you", body="as editor")
    await _tell(fable, me["id"], "due", "Due today: Call the dentist", data={"note_id": task["id"]})
    await _tell(fable, me["id"], "answer", "The assistant answered in Trip ideas", body="Kyoto in spring",
                data={"conversation_id": 999})

    await page.goto("/")
    count = page.locator("#bell-count")
    await expect(count).to_have_text("3")
    await page.click("#bell")
    items = page.locator("#bell-list .bell-item")
    await expect(items).to_have_count(3)
    await expect(items.first).to_contain_text("The assistant answered in Trip ideas")
    await expect(items.nth(2).locator(".bell-title")).to_have_text("<b>bob</b> shared the project Garden with you")
    assert await page.locator("#bell-list b").count() == 0  # user text is never HTML
    await expect(page.locator("#bell-list .unread")).to_have_count(3)
    await ui.shot("notifications")

    await items.nth(1).click()  # the due task
    await page.wait_for_url(f"**/notes/{task['id']}")
    await expect(page.locator("#bell-panel")).to_be_hidden()
    await expect(count).to_have_text("2")
    await page.click("#bell")
    await expect(page.locator("#bell-list .unread")).to_have_count(2)
    await page.click("#bell-mark-all")
    await expect(count).to_be_hidden()
    await expect(page.locator("#bell-list .unread")).to_have_count(0)
    await page.keyboard.press("Escape")
    await expect(page.locator("#bell-panel")).to_be_hidden()

    await _tell(fable, me["id"], "due", "Due today: something new")
    await page.click("a[href='/tasks']")  # a navigation refreshes the count
    await expect(count).to_have_text("1")
    assert ui.watch.errors == []


async def test_the_service_worker_shows_a_pushed_message(ui: Session) -> None:
    page, context = ui.page, ui.context
    await context.grant_permissions(["notifications"], origin=ui.base_url)
    await page.goto("/login")
    cdp = await context.new_cdp_session(page)
    registrations: list[dict[str, Any]] = []
    cdp.on("ServiceWorker.workerRegistrationUpdated", lambda event: registrations.extend(event["registrations"]))
    await cdp.send("ServiceWorker.enable")
    scope = await page.evaluate("""async () => {
        const reg = await navigator.serviceWorker.register('/sw.js');
        await navigator.serviceWorker.ready;
        return reg.scope;
    }""")
    assert scope == f"{ui.base_url}/"
    for _ in range(round(scaled(5) / 0.05)):
        found = [r for r in registrations if r["scopeURL"] == scope and not r.get("isDeleted")]
        if found:
            break
        await asyncio.sleep(0.05)
    pushed = message("due", "Due today: Call the dentist", "", {"note_id": 12}, 5)
    await cdp.send("ServiceWorker.deliverPushMessage", {
        "origin": ui.base_url, "registrationId": found[0]["registrationId"], "data": json.dumps(pushed)})
    shown: list[dict[str, Any]] = []
    for _ in range(round(scaled(5) / 0.05)):
        shown = await page.evaluate("""async () => {
            const reg = await navigator.serviceWorker.ready;
            const shown = await reg.getNotifications();
            return shown.map((n) => ({title: n.title, body: n.body, tag: n.tag, data: n.data}));
        }""")
        if shown:
            break
        await asyncio.sleep(0.05)
    assert shown == [{"title": "Due today: Call the dentist", "body": "", "tag": "fable-due-12",
                      "data": {"url": "/notes/12"}}]
    # a message whose url is another site's is shown, and leads home instead
    await cdp.send("ServiceWorker.deliverPushMessage", {
        "origin": ui.base_url, "registrationId": found[0]["registrationId"],
        "data": json.dumps({"title": "odd", "url": "//evil.example/x", "tag": "t2"})})
    for _ in range(round(scaled(5) / 0.05)):
        shown = await page.evaluate("""async () => (await (await navigator.serviceWorker.ready).getNotifications())
            .map((n) => ({title: n.title, data: n.data}))""")
        if len(shown) == 2:
            break
        await asyncio.sleep(0.05)
    assert {"title": "odd", "data": {"url": "/"}} in shown
    assert not [e for e in ui.watch.errors if not re.search(r"401", e)]
