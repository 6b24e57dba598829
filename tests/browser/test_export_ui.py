"""Settings → Data in Chromium: the Markdown button downloads the ZIP of the user's notes."""

from __future__ import annotations

import io
import zipfile

import pytest
from support.browser import Session

pytestmark = pytest.mark.browser


async def test_the_data_tab_downloads_a_markdown_zip(ui: Session) -> None:
    page = ui.page
    await ui.register("alice")
    await ui.api("POST", "/notes", {"title": "Exported", "body": "to disk"})
    await page.goto("/settings/data")
    async with page.expect_download() as info:
        await page.locator("#export-markdown").click()
    download = await info.value
    assert download.suggested_filename.startswith("fable-alice-") and download.suggested_filename.endswith(".zip")
    path = await download.path()
    assert zipfile.ZipFile(io.BytesIO(path.read_bytes())).namelist() == ["Exported.md"]
    await ui.shot("settings-data")
    assert ui.watch.errors == []
