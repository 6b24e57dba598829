"""Images in a note, in the browser, under the app's real CSP (``img-src 'self' data:``): alice
inserts an image from the editor's button (uploaded into the image store), saves, and the note
shows it; an image of another site in the same note is a plain link, never fetched."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Request, expect
from support.browser import Session
from support.images import png

pytestmark = pytest.mark.browser


async def test_a_note_shows_its_cached_image_and_links_an_external_one(ui: Session) -> None:
    page = ui.page
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url) if isinstance(request, Request) else None)
    await ui.register("alice")
    note = await ui.api("POST", "/notes", {"title": "Holiday", "body": "The view: ![the bay](https://img.example.org/bay.jpg)"})
    await page.goto(f"/notes/{note['id']}")
    await page.locator("#edit-note").click()
    source = page.locator("#note-source")
    await source.press("Control+End")
    await page.locator("#image-file").set_input_files(
        files=[{"name": "sunset.png", "mimeType": "image/png", "buffer": png(230, 120, 40, size=160)}])
    await expect(source).to_have_value(re.compile(r"!\[sunset\]\(/api/images/\d+\)\n$"))
    await expect(page.locator("#preview img")).to_have_attribute("src", re.compile(r"^/api/images/\d+$"))
    await page.locator("#save-note").click()

    body = page.locator("#note-body")
    image = body.locator("img")
    await expect(image).to_have_attribute("alt", "sunset")
    await page.wait_for_function("() => document.querySelector('#note-body img')?.naturalWidth === 160")
    link = body.get_by_role("link", name="the bay")
    await expect(link).to_have_attribute("href", "https://img.example.org/bay.jpg")
    await ui.shot("note-image")
    assert not [url for url in asked if "img.example.org" in url]
    assert ui.watch.errors == []  # a CSP violation would be a console error
