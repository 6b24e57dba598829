"""Renders the web app's PNG icons from fable_web/static/icons/icon.svg with Chromium, once:
the PNGs are committed (run again only when the SVG changes). `.venv/bin/python scripts/render-icons.py`"""

from __future__ import annotations

import asyncio
from pathlib import Path

from playwright.async_api import async_playwright

ICONS = Path(__file__).resolve().parents[1] / "fable_web" / "static" / "icons"


async def main() -> None:
    svg = (ICONS / "icon.svg").read_text()
    square = svg.replace(' rx="8"', "")  # maskable: the platform cuts its own shape out of a full square
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        for name, source, size in (("icon-192.png", svg, 192), ("icon-512.png", svg, 512),
                                   ("icon-maskable-512.png", square, 512)):
            page = await browser.new_page(viewport={"width": size, "height": size})
            sized = source.replace("<svg ", f'<svg width="{size}" height="{size}" ', 1)
            await page.set_content(f"<style>html,body{{margin:0;background:transparent}}</style>{sized}")
            await page.screenshot(path=str(ICONS / name), omit_background=True)
            await page.close()
        await browser.close()


asyncio.run(main())
