"""The UI at phone widths (320 and 390 px): no page is wider than the screen, the navigation is
a menu button with a drawer, buttons and links are 44 px tall, and fields use 16 px text."""

from __future__ import annotations

import pytest
from playwright.async_api import expect
from support.browser import Session
from support.page_tour import SIGNED_OUT, paths, seed, visit

pytestmark = pytest.mark.browser

WIDER = "document.documentElement.scrollWidth - window.innerWidth"


async def test_no_page_is_wider_than_a_phone(ui: Session) -> None:
    page = ui.page
    too_wide = []
    for width in (320, 390):
        await page.set_viewport_size({"width": width, "height": 740})
        for path in SIGNED_OUT:
            await page.goto(path)
            await expect(page.locator(".auth")).to_be_visible()
            if (over := await page.evaluate(WIDER)) > 0:
                too_wide.append(f"{path} at {width}px: {over}px too wide")
    ids = await seed(ui)
    for path in paths(ids):
        await page.set_viewport_size({"width": 320, "height": 740})
        await visit(page, path)
        for width in (320, 390):  # the same page, made wider: a new layout, no new requests
            await page.set_viewport_size({"width": width, "height": 740})
            if (over := await page.evaluate(WIDER)) > 0:
                culprit = await page.evaluate("""() => [...document.querySelectorAll('body *')]
                    .filter(e => e.getBoundingClientRect().right > innerWidth + 1 || e.scrollWidth > innerWidth + 1)
                    .map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + '.' + [...e.classList].join('.'))
                    .slice(-6).join(', ')""")
                too_wide.append(f"{path} at {width}px: {over}px too wide ({culprit})")
    assert not too_wide, "\n".join(too_wide)
    assert not ui.watch.errors


async def test_the_menu_button_opens_the_navigation_with_44px_targets_and_16px_fields(ui: Session) -> None:
    page = ui.page
    await page.set_viewport_size({"width": 360, "height": 740})
    await seed(ui)
    await page.goto("/")
    nav = page.get_by_role("navigation", name="Main")
    await expect(nav).to_be_hidden()
    menu = page.get_by_role("button", name="Menu")
    await expect(menu).to_have_attribute("aria-expanded", "false")
    await menu.click()
    await expect(nav).to_be_visible()
    await expect(menu).to_have_attribute("aria-expanded", "true")
    await ui.shot("phone-menu")
    small = await page.evaluate("""() => [...document.querySelectorAll(
            '#menu-button, #nav a, .sidebar-foot button, .topbar a, .topbar button, .topbar input, #main .btn')]
        .filter(e => e.offsetParent && e.getBoundingClientRect().height < 44)
        .map(e => (e.id || e.textContent.trim() || e.tagName) + ' ' + e.getBoundingClientRect().height)""")
    assert not small
    assert await page.evaluate("getComputedStyle(document.getElementById('search')).fontSize") == "16px"
    await nav.get_by_role("link", name="Notes").focus()
    await page.keyboard.press("Escape")  # closes the menu, back on its button
    await expect(nav).to_be_hidden()
    await expect(menu).to_be_focused()
    await page.keyboard.press("Enter")
    await nav.get_by_role("link", name="Tasks").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text("Tasks")
    await expect(nav).to_be_hidden()  # a choice closes the drawer
    await expect(page.locator("#new-task")).to_have_css("font-size", "16px")
    await ui.shot("phone-tasks")
    assert not ui.watch.errors


async def test_the_service_worker_registers_and_the_app_starts_offline(ui: Session) -> None:
    page = ui.page
    await seed(ui)
    await page.goto("/notes")
    await expect(page.get_by_role("heading", level=1)).to_have_text("Notes")
    scope = await page.evaluate("navigator.serviceWorker.ready.then(r => r.scope)")
    assert scope == f"{ui.base_url}/"
    cached = await page.evaluate(
        "caches.open('fable-shell-v1').then(c => c.keys()).then(k => k.map(r => new URL(r.url).pathname))")
    assert {"/", "/js/app.js", "/js/dom.js", "/css/shell.css"} <= set(cached)
    assert not [path for path in cached if path.startswith("/api")]
    await ui.context.set_offline(True)
    await page.reload()
    # the shell starts from the cache; the data it cannot reach is said so in plain words
    await expect(page.get_by_role("heading", level=1)).to_have_text("You are offline")
    await expect(page.get_by_role("button", name="Try again")).to_be_visible()
    await ui.context.set_offline(False)  # back online: the app starts by itself
    await expect(page.get_by_role("heading", level=1)).to_have_text("Notes")
    assert not [error for error in ui.watch.errors if "ERR_INTERNET_DISCONNECTED" not in error]
