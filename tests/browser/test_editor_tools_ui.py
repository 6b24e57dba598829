"""The note editor's tools, in the browser: link suggestions (a title the text names without a
link is offered, and choosing it links that mention), [[links]] and #tags marked as they are typed
(a link to an existing note unlike one to none; typed HTML stays text), the slash menu (keyboard,
filter, Esc, never a "/" inside a word or an address), and the single-key shortcuts t, c, e, n."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from playwright.async_api import expect
from support.axe import AXE, severe_violations
from support.browser import Session

pytestmark = pytest.mark.browser


async def test_link_suggestions_marks_and_the_slash_menu(ui: Session) -> None:
    page = ui.page
    assert AXE.is_file(), "axe-core is missing: run ./scripts/install-test-tools"
    await ui.context.add_init_script(path=str(AXE))
    await ui.register("alice")
    await ui.api("POST", "/notes", {"title": "Garden plan", "body": "beds"})
    note = await ui.api("POST", "/notes", {"title": "Spring", "body": "We follow the garden plan this year."})
    await page.goto(f"/notes/{note['id']}")
    await page.locator("#edit-note").click()
    source = page.locator("#note-source")

    # link suggestions: the unlinked mention is offered; choosing it links it where it is written
    suggestion = page.locator("#link-suggestions .link-suggestion")
    await expect(suggestion).to_have_count(1)
    await expect(suggestion).to_contain_text("[[Garden plan]]")
    assert not (found := await severe_violations(page)), "\n".join(found)
    await suggestion.click()
    await expect(source).to_have_value("We follow the [[garden plan]] this year.")
    await expect(source).to_be_focused()
    await expect(suggestion).to_have_count(0)

    # marks: a link to a note, a link to none, a tag; typed HTML is text in the backdrop
    await source.press("End")
    await page.keyboard.insert_text("\n[[Nowhere]] #idea <img src=x onerror=alert(1)>\n")
    backdrop = page.locator(".hl-backdrop")
    await expect(backdrop.locator(".hl-link.hl-resolved")).to_have_text("[[garden plan]]")
    await expect(backdrop.locator(".hl-link.hl-missing")).to_have_text("[[Nowhere]]")
    await expect(backdrop.locator(".hl-tag")).to_have_text("#idea")
    await expect(backdrop).to_contain_text("<img src=x onerror=alert(1)>")
    await expect(backdrop.locator("img")).to_have_count(0)
    await page.emulate_media(color_scheme="dark")
    await ui.shot("note-editor-marks-dark")
    await page.emulate_media(color_scheme="light")

    # the slash menu: opens at the start of a line, filters as words are typed, Enter inserts
    menu = page.get_by_role("listbox", name="Insert")
    await page.keyboard.type("/")
    await expect(menu).to_be_visible()
    options = menu.get_by_role("option")
    await expect(options).to_have_count(14)
    first = await options.first.get_attribute("id")
    assert await source.get_attribute("aria-activedescendant") == first
    # (the preview shows the <img> typed above without an alt: the writer's own markup)
    found = [v for v in await severe_violations(page) if " image-alt " not in v]
    assert not found, "\n".join(found)
    await page.emulate_media(color_scheme="dark")
    await ui.shot("note-editor-slash-menu-dark")
    assert not (found := await severe_violations(page, ["color-contrast"])), "\n".join(found)
    await page.emulate_media(color_scheme="light")
    await page.keyboard.type("tab")
    await expect(options).to_have_text(["Table"])
    await page.keyboard.press("Enter")
    await expect(menu).to_be_hidden()
    value = await source.input_value()
    assert value.endswith("\n| Column | Column |\n| --- | --- |\n|  |  |\n"), value
    assert await page.evaluate("(() => { const t = document.getElementById('note-source');"
                               " return t.value.slice(t.selectionStart, t.selectionEnd); })()") == "Column"

    await source.press("Control+End")
    await page.keyboard.type("/he")
    await expect(options).to_have_text(["Heading 1", "Heading 2", "Heading 3"])
    await page.keyboard.press("ArrowDown")
    await expect(options.nth(1)).to_have_attribute("aria-selected", "true")
    assert await source.get_attribute("aria-activedescendant") == await options.nth(1).get_attribute("id")
    await page.keyboard.press("Enter")
    await page.keyboard.type("Plan")
    assert (await source.input_value()).endswith("\n## Plan")

    # Esc closes it and leaves the words; it stays closed while they go on
    await page.keyboard.type(" /quo")
    await expect(options).to_have_text(["Quote"])
    await page.keyboard.press("Escape")
    await expect(menu).to_be_hidden()
    await expect(source).to_be_focused()
    await page.keyboard.type("te")
    await expect(menu).to_be_hidden()
    assert (await source.input_value()).endswith("## Plan /quote")

    # never inside a word or an address
    await page.keyboard.type(" and/or https://example.org/a/b")
    await expect(menu).to_be_hidden()

    # a click inserts too; "link to note" opens the [[ completion; today's date is the user's
    await page.keyboard.insert_text("\n")
    await page.keyboard.type("/today")
    await options.filter(has_text="Today's date").click()
    assert (await source.input_value()).endswith("\n" + datetime.now(UTC).date().isoformat())
    await expect(source).to_be_focused()
    await page.keyboard.type(" /link")
    await page.keyboard.press("Enter")
    assert (await source.input_value()).endswith(" [[")
    await expect(page.get_by_role("listbox", name="Suggestions")).to_be_visible()
    await page.keyboard.press("Escape")
    assert ui.watch.dialogs == [] and ui.watch.errors == []


async def test_single_key_shortcuts(ui: Session) -> None:
    page = ui.page
    await ui.register("alice")
    note = await ui.api("POST", "/notes", {"title": "Groceries", "body": "milk"})
    await page.goto("/")
    await expect(page.locator("#main h1").first).to_be_visible()

    await page.keyboard.press("t")
    await expect(page).to_have_url(re.compile(r"/tasks$"))
    task = page.locator("#new-task")
    await expect(task).to_be_focused()
    await page.keyboard.type("t")  # in a field a key is only a letter
    await expect(task).to_have_value("t")
    await expect(page).to_have_url(re.compile(r"/tasks$"))

    await page.keyboard.press("Escape")
    await page.keyboard.press("c")
    await expect(page).to_have_url(re.compile(r"/chat$"))
    await page.keyboard.press("Escape")
    await page.keyboard.press("Control+c")  # with a modifier: nothing
    await expect(page).to_have_url(re.compile(r"/chat$"))

    await page.goto(f"/notes/{note['id']}")
    await expect(page.locator("#edit-note")).to_be_visible()
    await page.keyboard.press("e")
    source = page.locator("#note-source")
    await expect(source).to_be_focused()
    await page.keyboard.type(" tcen")
    await expect(source).to_have_value("milk tcen")
    await page.locator("#cancel-edit").click()
    await page.get_by_role("dialog").get_by_role("button", name="Discard").click()
    await expect(page.locator("#edit-note")).to_be_visible()
    await page.keyboard.press("n")
    await expect(page).to_have_url(re.compile(r"/notes/new$"))
    await expect(page.locator(".title-input")).to_be_focused()

    await page.keyboard.press("Escape")
    await page.keyboard.press("?")
    dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    for what in ("New task", "New chat", "Edit the note on screen"):
        await expect(dialog).to_contain_text(what)
    assert ui.watch.errors == []
