"""The web app can be installed: a manifest linked from every page, served as
application/manifest+json, whose icons (SVG, PNG 192 and 512, maskable) are there."""

from __future__ import annotations

import struct

import httpx


async def test_the_manifest_is_linked_served_with_its_type_and_its_icons_exist(client: httpx.AsyncClient) -> None:
    index = (await client.get("/notes/3")).text
    assert '<link rel="manifest" href="/manifest.webmanifest">' in index
    assert '<meta name="theme-color"' in index
    response = await client.get("/manifest.webmanifest")
    assert response.headers["content-type"] == "application/manifest+json"
    manifest = response.json()
    assert manifest["start_url"] == "/" and manifest["display"] == "standalone" and manifest["name"] == "Fable"
    purposes = set()
    for icon in manifest["icons"]:
        served = await client.get(icon["src"])
        assert served.status_code == 200 and served.headers["content-type"] == icon["type"], icon
        if icon["type"] == "image/png":  # the PNG's own width and height are the ones declared
            width, height = struct.unpack(">II", served.content[16:24])
            assert icon["sizes"] == f"{width}x{height}"
        purposes.add(icon["purpose"])
    assert {"any", "maskable"} <= purposes
    assert {icon["sizes"] for icon in manifest["icons"]} >= {"192x192", "512x512", "any"}
