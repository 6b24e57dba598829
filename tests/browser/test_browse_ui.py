"""Browsing in a real Chromium: the Notes page (count, notes by default, tasks or all, sort),
the Tags page's tree, the quick switcher (Ctrl+K) and command palette (">" or Ctrl+Shift+P),
and "[[" completion ranking the same title first. Screenshots of the Tags page and the switcher
go to docs/screenshots."""

from __future__ import annotations

import asyncio
import contextlib
import re

import pytest
from playwright.async_api import Error, Route, expect
from support.browser import Session
from support.pace import scaled

pytestmark = pytest.mark.browser


async def test_notes_page_counts_sorts_and_filters_and_tags_form_a_tree(ui: Session) -> None:
    page = ui.page
    await ui.register("nia")
    for title, tags in (("Beta note", ["work/acme"]), ("alpha note", ["work"]), ("Gamma note", ["home"])):
        await ui.api("POST", "/notes", {"title": title, "tags": tags})
    await ui.api("POST", "/notes", {"title": "A task", "status": "todo", "tags": ["work/acme/q3"]})
    await page.goto("/notes")
    titles = page.locator("#notes-list .note-item .title")
    await expect(titles).to_have_text(["Gamma note", "alpha note", "Beta note"])  # notes only, newest first
    await expect(page.locator("#notes-count")).to_have_text("3 notes")
    await page.locator("#notes-sort").select_option("title")
    await expect(page).to_have_url(re.compile(r"/notes\?sort=title$"))
    await expect(titles).to_have_text(["alpha note", "Beta note", "Gamma note"])
    await page.get_by_role("button", name="Tasks").click()
    await expect(titles).to_have_text(["A task"])
    await expect(page.locator("#notes-count")).to_have_text("1 task")
    await page.get_by_role("button", name="All").click()
    await expect(page.locator("#notes-count")).to_have_text("4 items")
    await page.goto("/notes?q=task")  # the top bar's search looks at notes and tasks
    await expect(titles).to_have_text(["A task"])
    await page.get_by_role("button", name="Notes").click()
    await expect(page).to_have_url(re.compile(r"/notes\?q=task&kind=note$"))
    await expect(page.locator("#notes-list .empty")).to_be_visible()

    await page.goto("/tags")
    work = page.locator(".tag-tree-item", has=page.locator("> a", has_text="#work"))
    await expect(work.locator("> .count")).to_have_text("3")
    acme = page.get_by_role("link", name="#acme", exact=True)
    await expect(acme).to_be_visible()
    q3 = page.get_by_role("link", name="#q3")
    await expect(q3).to_be_hidden()
    toggle = page.get_by_role("button", name="Show tags under #work/acme")
    await expect(toggle).to_have_attribute("aria-expanded", "false")
    await toggle.click()
    await expect(toggle).to_have_attribute("aria-expanded", "true")
    await expect(q3).to_be_visible()
    await expect(page.locator("main")).not_to_contain_text("null")
    await ui.shot("tags")
    await page.get_by_role("button", name="Show tags under #work", exact=True).click()
    await expect(acme).to_be_hidden()
    await page.get_by_role("button", name="Expand all").click()
    await q3.click()
    await expect(page).to_have_url(re.compile(r"/notes\?tag=work%2Facme%2Fq3&kind=all$"))
    await expect(titles).to_have_text(["A task"])
    assert ui.watch.errors == []


async def test_quick_switcher_and_command_palette(ui: Session) -> None:
    page = ui.page
    await ui.register("kai")
    for title in ("Garden plan", "Garden", "Plant list for the garden"):
        await ui.api("POST", "/notes", {"title": title})
    await page.goto("/notes")
    await expect(page.locator("#notes-count")).to_have_text("3 notes")
    await page.keyboard.press("Control+k")
    box = page.get_by_role("combobox", name="Go to a note")
    await expect(box).to_be_focused()
    options = page.get_by_role("listbox", name="Results").get_by_role("option")
    await expect(options).to_have_count(3)  # recent notes before typing
    await box.press_sequentially("garden")
    await expect(options).to_have_text(["Garden", "Garden plan", "Plant list for the garden"])
    await expect(box).to_have_attribute("aria-activedescendant", "switcher-opt-0")
    await ui.shot("quick-switcher")
    await box.press("ArrowDown")
    await expect(box).to_have_attribute("aria-activedescendant", "switcher-opt-1")
    await expect(options.nth(1)).to_have_attribute("aria-selected", "true")
    await box.press("Enter")
    await expect(page.get_by_role("heading", name="Garden plan")).to_be_visible()
    await expect(page.get_by_role("dialog")).to_have_count(0)

    await page.keyboard.press("Control+Shift+P")
    await expect(box).to_have_value(">")
    await box.press_sequentially("gotags")
    await expect(options.first).to_have_text(re.compile("^Go to Tags"))
    await box.press("Enter")
    await expect(page).to_have_url(re.compile(r"/tags$"))
    await page.keyboard.press("Control+k")
    await box.fill(">theme")
    await box.press("Enter")
    theme = await page.evaluate("document.documentElement.dataset.theme")
    assert theme in ("dark", "light")
    await page.reload()
    await expect(page.get_by_role("heading", name="Tags")).to_be_visible()
    assert await page.evaluate("document.documentElement.dataset.theme") == theme  # kept
    await page.keyboard.press("Control+k")
    await box.fill("zzzz")
    await expect(page.get_by_role("dialog")).to_contain_text("Nothing matches.")
    await page.keyboard.press("Escape")
    await expect(page.get_by_role("dialog")).to_have_count(0)
    assert ui.watch.errors == []


async def test_wikilink_completion_ranks_the_same_title_first(ui: Session) -> None:
    page = ui.page
    await ui.register("ola")
    for title in ("Soil mix for seedlings", "Soil", "Potting soil"):
        await ui.api("POST", "/notes", {"title": title})
    await page.goto("/notes/new")
    await page.locator(".title-input").fill("Seeds")
    source = page.locator("textarea").first
    await source.press_sequentially("Use [[soil")
    suggestions = page.locator("ul.suggest [role=option]")
    await expect(suggestions).to_have_text(["Soil", "Soil mix for seedlings", "Potting soil"])
    await source.press("ArrowDown")
    selected = await suggestions.nth(1).get_attribute("id")
    await expect(source).to_have_attribute("aria-activedescendant", selected or "")
    await source.press("Enter")
    await expect(source).to_have_value("Use [[Soil mix for seedlings]]")
    assert ui.watch.errors == []


async def test_the_search_box_takes_a_tag_operator(ui: Session) -> None:
    """Issue 38, item 12: `tag:garden` alone lists that tag's notes; with words it narrows the search."""
    page = ui.page
    await ui.register("gus")
    await ui.api("POST", "/notes", {"title": "Roses", "body": "prune the roses", "tags": ["garden"]})
    await ui.api("POST", "/notes", {"title": "Rose wine", "body": "roses in a glass", "tags": ["kitchen"]})
    await page.goto("/")
    await page.fill("#search", "tag:garden")
    await page.keyboard.press("Enter")
    await expect(page).to_have_url(f"{ui.base_url}/notes?tag=garden")
    await expect(page.locator("#notes-list li")).to_have_count(1)
    await page.fill("#search", "roses tag:kitchen")
    await page.keyboard.press("Enter")
    await expect(page.locator("#notes-list li")).to_have_count(1)
    await expect(page.locator("#notes-list")).to_contain_text("Rose wine")
    assert not ui.watch.errors


async def test_search_shows_results_as_you_type(ui: Session) -> None:
    """Issue 38, item 12: results without Enter, an older slow answer never drawn over a newer
    one (its request cancelled), the query in the URL, Enter and tag: still work, the count said."""
    page = ui.page
    await ui.register("sol")
    await ui.api("POST", "/notes", {"title": "Garden plan", "body": "where the garden beds go"})
    await ui.api("POST", "/notes", {"title": "Garden pests", "body": "aphids on the garden roses"})
    await ui.api("POST", "/notes", {"title": "Compost bin", "body": "turn the compost weekly", "tags": ["kitchen"]})
    await ui.api("POST", "/notes", {"title": "Compost tea", "body": "compost steeped in water"})
    titles = page.locator("#notes-list .note-item .title")
    search = page.locator("#search")
    await page.goto("/")
    await search.press_sequentially("garden", delay=30)  # from another page: to the notes page, still typing
    await expect(page).to_have_url(f"{ui.base_url}/notes?q=garden")
    await expect(titles).to_have_count(2)
    await expect(search).to_be_focused()
    await expect(page.locator("#search-status")).to_have_text("2 results for “garden”.")
    await expect(page.locator("#search-status")).to_have_attribute("aria-live", "polite")
    await search.press_sequentially(" pests", delay=30)
    await expect(titles).to_have_text(["Garden pests"])
    await expect(page).to_have_url(f"{ui.base_url}/notes?q=garden+pests")
    await expect(page.get_by_role("heading", level=1)).to_have_text("Search: garden pests")

    released = asyncio.Event()

    async def slow(route: Route) -> None:  # the answer to "compost" held until a later query is drawn
        await released.wait()
        with contextlib.suppress(Error):  # the page has cancelled it: nothing to answer
            await route.continue_()

    await page.route(re.compile(r"/api/search\?query=compost&"), slow)
    await search.fill("")
    await search.press_sequentially("compost", delay=30)
    await expect(page.locator("#search-status")).to_have_text("Searching for “compost”…")
    await search.press_sequentially(" tea", delay=30)
    await expect(titles).to_have_text(["Compost tea"])
    released.set()
    await page.wait_for_timeout(scaled(0.5) * 1000)
    await expect(titles).to_have_text(["Compost tea"])  # the older answer never drawn over it
    await expect(page.locator("#notes-list")).to_have_attribute("data-query", "compost tea")
    await expect(page).to_have_url(f"{ui.base_url}/notes?q=compost+tea")
    await page.unroute(re.compile(r"/api/search\?query=compost&"))

    await search.fill("aphids")
    await search.press("Enter")  # Enter searches at once
    await expect(titles).to_have_text(["Garden pests"])
    await search.fill("")
    await search.press_sequentially("tag:kitchen", delay=20)
    await expect(page).to_have_url(f"{ui.base_url}/notes?tag=kitchen")
    await expect(titles).to_have_text(["Compost bin"])
    await search.fill("tea tag:kitchen")  # a tag and words: nothing has both
    await expect(page.locator("#notes-list .empty")).to_be_visible()
    await expect(page).to_have_url(re.compile(r"/notes\?q=tea\+tag%3Akitchen$"))
    assert not ui.watch.errors
