"""Settings → Import in the browser: alice picks an Obsidian vault ZIP, sees the dry run's report
(what would be created, what is skipped and why), imports it, and the note is there."""

from __future__ import annotations

import io
import zipfile

import pytest
from playwright.async_api import expect
from support.browser import Session

pytestmark = pytest.mark.browser


def _vault() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("Vault/Garden plan.md", "---\ntags: [garden]\n---\nTomatoes by [[Shed]] #spring\n")
        archive.writestr("Vault/Shed.md", "Tools live here.")
        archive.writestr("Vault/odd.md", b"\x00\x01binary")
    return buffer.getvalue()


async def test_a_vault_is_checked_then_imported(ui: Session) -> None:
    page = ui.page
    await ui.register("alice")
    await page.goto("/settings/import")
    await page.locator("#import-file").set_input_files(
        files=[{"name": "vault.zip", "mimeType": "application/zip", "buffer": _vault()}])
    await page.locator("#import-check").click()
    await expect(page.locator("#import-summary")).to_have_text("Would create 2, skipping 1.")
    await expect(page.locator("#import-report")).to_contain_text("not text (a binary file named .md)")
    await ui.shot("import")
    await page.locator("#import-confirm").click()
    await expect(page.locator("#import-summary")).to_have_text("Created 2, skipping 1.")
    notes = await ui.api("GET", "/notes", None)
    assert {n["title"] for n in notes["items"]} == {"Garden plan", "Shed"}
    assert ui.watch.errors == []
