"""Inline ``#tags`` in a real Chromium: a ``#garden`` typed in the editor is a tag once saved, its
link lists the note, the Tags page's tree has it, and the note's page shows it as coming from the
text (no remove button: the text is where it goes)."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import expect
from support.browser import Session

pytestmark = pytest.mark.browser


async def test_a_hashtag_typed_in_the_text_is_a_tag_to_follow(ui: Session) -> None:
    page = ui.page
    await ui.register("ivy")
    await ui.api("POST", "/notes", {"title": "Untagged note"})
    await page.goto("/notes/new")
    await page.fill(".title-input", "Seeds to buy")
    await page.locator("#tag-input").fill("shopping")
    await page.locator("#tag-input").press("Enter")
    await page.locator("#note-source").fill("Tomatoes for the #garden, see `#notatag`")
    await page.locator("#save-note").click()
    await expect(page).to_have_url(re.compile(r"/notes/\d+$"))

    from_text = page.locator(".chip-text", has_text="#garden")
    await expect(from_text).to_have_attribute("title", re.compile("from the text|in the text"))
    await expect(from_text).to_have_accessible_name(re.compile(r"#garden \(from the text\)"))
    await expect(page.get_by_role("link", name="#shopping", exact=True)).to_be_visible()
    await page.get_by_role("button", name="Edit").click()
    editor = page.locator("#note-editor")
    await expect(editor.get_by_role("button", name="Remove tag shopping")).to_be_visible()
    await expect(editor.locator(".chip-text", has_text="#garden")).to_be_visible()
    await expect(editor.get_by_role("button", name="Remove tag garden")).to_have_count(0)
    await editor.locator("#cancel-edit").click()

    await page.locator("#note-body a.tag", has_text="#garden").click()
    await expect(page).to_have_url(re.compile(r"/notes\?tag=garden"))
    await expect(page.locator("#notes-list .note-item .title")).to_have_text(["Seeds to buy"])

    await page.goto("/tags")
    garden = page.locator(".tag-tree-item", has=page.locator("> a", has_text="#garden"))
    await expect(garden.locator("> .count")).to_have_text("1")
    await expect(page.get_by_role("link", name="#notatag")).to_have_count(0)
    assert ui.watch.errors == []
