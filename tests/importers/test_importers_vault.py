"""Importing an Obsidian vault and a basic-memory project: a dry run stores nothing, the import
brings front matter, tags (front matter, inline, folder), working links and embedded images;
running it again creates nothing; bad archives are refused whole, bad files skipped with why."""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import replace
from typing import Any

import pytest
from mcp import Client
from sqlalchemy import func, select, text
from support.images import png
from support.importers import Rest, zipped

from fable_core.data.importers import archive
from fable_core.db.models import Image, ImportedItem, Note, NoteLink
from fable_core.errors import InvalidInput, PayloadTooLarge, Unavailable
from fable_core.outside.images.store import stored_at
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_mcp.server import build_server

PIC = png(10, 120, 200)

VAULT: dict[str, bytes | str] = {
    "My Vault/.obsidian/app.json": "{}",
    "My Vault/Daily/2024-01-05.md": (
        "---\ntags: [journal, Daily Log]\naliases:\n  - Friday\ncreated: 2024-01-05T08:00:00\n---\n"
        "# Morning\nCoffee with [[Ideas#Top]].\n"),
    "My Vault/Ideas.md": (
        "An idea #project/alpha and #2024 (a number, not a tag).\n\n# Heading is not a tag\n"
        "```python\nx = 1  # comment, not a tag\n```\nAlso `#code` is not one.\n"
        "See [[Daily/2024-01-05#Morning|that morning]], [[Friday]] and [[Missing Note]].\n"
        "![[pic.png|300]] and ![a pic](attachments/pic%202.png) and ![web](https://example.com/x.png)\n"),
    "My Vault/attachments/pic.png": PIC,
    "My Vault/attachments/pic 2.png": PIC,
    "My Vault/Broken.md": "---\ntitle: [unclosed\n---\nbody survives\n",
    "My Vault/binary.md": b"\x00\x01\x02 not text",
    "My Vault/paper.pdf": b"%PDF-1.7",
}


async def counts(fable: Fable, caller: Caller) -> tuple[int, int, int]:
    async with fable.db.reading() as s:
        notes = await s.scalar(select(func.count()).select_from(Note).where(Note.user_id == caller.user_id))
        images = await s.scalar(select(func.count()).select_from(Image).where(Image.user_id == caller.user_id))
        items = await s.scalar(select(func.count()).select_from(ImportedItem))
    return int(notes or 0), int(images or 0), int(items or 0)


def by_item(report: dict[str, Any], key: str) -> dict[str, dict[str, Any]]:
    return {line["item"]: line for line in report.get(key, [])}


async def test_a_dry_run_then_the_import_then_a_rerun_that_creates_nothing(
        fable: Fable, alice: Caller, rest: Rest) -> None:
    content = zipped(VAULT)
    async with rest(alice) as http:
        dry = await http.post("/import/vault", content=content, headers={"content-type": "application/zip"})
        assert dry.status_code == 200, dry.text
        report = dry.json()
        assert report["dry_run"] is True and report["created"] == 3 and report["images"] == 2
        assert await counts(fable, alice) == (0, 0, 0)
        skipped = by_item(report, "skipped_items")
        assert skipped["binary.md"]["reason"] == "not text (a binary file named .md)"
        assert skipped["paper.pdf"]["reason"] == "not a Markdown note or an image"
        assert "front matter" in by_item(report, "warnings")["Broken.md"]["reason"]

        done = (await http.post("/import/vault", params={"dry_run": "false"}, files={"content": ("v.zip", content)}))
        assert done.status_code == 200, done.text
        report = done.json()
        assert report["created"] == 3 and report["images"] == 2 and not report["dry_run"]
        ids = {line["item"]: line["id"] for line in report["created_items"]}
        assert set(ids) == {"Daily/2024-01-05.md", "Ideas.md", "Broken.md"}

    async with fable.db.reading() as s:
        notes = {n.title: n for n in (await s.scalars(select(Note).where(Note.user_id == alice.user_id))).all()}
        image_id = await s.scalar(select(Image.id))
        links = {(r.source_id, r.target_id) for r in (await s.scalars(select(NoteLink))).all()}
    daily, ideas = notes["2024-01-05"], notes["Ideas"]
    assert daily.tags == ["journal", "daily-log", "daily"] and daily.created_at.year == 2024
    assert ideas.tags == ["project/alpha"]
    assert "[[2024-01-05|that morning]]" in ideas.body and "[[2024-01-05|Friday]]" in ideas.body
    assert "[[Ideas|Ideas > Top]]" in daily.body
    assert f"![pic.png](/api/images/{image_id})" in ideas.body
    assert f"![a pic](/api/images/{image_id})" in ideas.body and "(https://example.com/x.png)" in ideas.body
    assert (ideas.id, daily.id) in links and (daily.id, ideas.id) in links and (ideas.id, None) in links
    assert notes["Broken"].body.startswith("---\ntitle: [unclosed")

    again = await fable.call("import_vault", {"content": content, "dry_run": False}, alice)
    assert again["created"] == 0 and await counts(fable, alice) == (3, 1, 3)
    assert by_item(again, "skipped_items")["Ideas.md"] == {"item": "Ideas.md", "id": ideas.id,
                                                           "reason": "imported before"}
    # a deleted note comes back on the next import
    await fable.call("delete_note", {"note_id": ideas.id}, alice)
    back = await fable.call("import_vault", {"content": content, "dry_run": False}, alice)
    assert [line["item"] for line in back["created_items"]] == ["Ideas.md"]
    assert await counts(fable, alice) == (3, 1, 3)


async def test_basic_memory_observations_relations_and_permalinks(fable: Fable, alice: Caller) -> None:
    project = zipped({
        "coffee.md": ("---\ntitle: Coffee Brewing\ntype: note\npermalink: coffee-brewing\ntags:\n- coffee\n---\n"
                      "## Observations\n- [method] Pour over is clean #brewing\n\n"
                      "## Relations\n- relates_to [[tea-notes]]\n"),
        "notes/tea.md": "---\ntitle: Tea Notes\npermalink: tea-notes\n---\nSee [[Coffee Brewing]].\n",
    })
    report = await fable.call("import_vault", {"content": project, "kind": "basic_memory", "dry_run": False}, alice)
    assert report["created"] == 2
    async with fable.db.reading() as s:
        notes = {n.title: n for n in (await s.scalars(select(Note))).all()}
        links = {(r.source_id, r.target_id) for r in (await s.scalars(select(NoteLink))).all()}
    coffee, tea = notes["Coffee Brewing"], notes["Tea Notes"]
    assert coffee.tags == ["coffee", "note", "brewing"] and tea.tags == ["notes"]
    assert "- relates_to [[Tea Notes]]" in coffee.body and "- [method] Pour over is clean #brewing" in coffee.body
    assert links == {(coffee.id, tea.id), (tea.id, coffee.id)}


async def test_a_title_an_existing_note_has_is_skipped_not_duplicated(fable: Fable, alice: Caller) -> None:
    await fable.call("create_note", {"title": "Ideas", "body": "mine"}, alice)
    report = await fable.call("import_vault", {"content": zipped({"Ideas.md": "x", "Other.md": "y"}),
                                               "dry_run": False}, alice)
    assert report["created"] == 1 and "already has the same title" in report["skipped_items"][0]["reason"]


@pytest.mark.parametrize("name", ["../evil.md", "/abs.md", "a/../../b.md", "C:/win.md", "a\\..\\b.md"])
async def test_a_name_outside_the_archive_refuses_it_whole(fable: Fable, alice: Caller, name: str) -> None:
    with pytest.raises(InvalidInput, match="outside itself"):
        await fable.call("import_vault", {"content": zipped({"ok.md": "fine", name: "evil"}), "dry_run": False}, alice)
    assert await counts(fable, alice) == (0, 0, 0)


async def test_bombs_huge_files_and_junk_are_refused_with_nothing_written(
        fable: Fable, alice: Caller, rest: Rest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive, "MAX_TOTAL", 10_000)
    with pytest.raises(PayloadTooLarge, match="inflates to 20000 bytes"):
        await fable.call("import_vault", {"content": zipped({"a.md": "a" * 8_000, "b.md": "b" * 12_000}),
                                          "dry_run": False}, alice)
    monkeypatch.setattr(archive, "MAX_FILE", 1_000)
    report = await fable.call("import_vault", {"content": zipped({"big.md": "x" * 2_000, "small.md": "y"}),
                                               "dry_run": False}, alice)
    assert report["created"] == 1 and report["skipped_items"] == [
        {"item": "big.md", "reason": "larger than 1000 bytes"}]
    async with rest(alice) as http:
        for bad in ({"content": b"just text", "headers": {"content-type": "application/octet-stream"}},
                    {"content": b"PK\x03\x04broken", "headers": {"content-type": "application/octet-stream"}},
                    {"json": {"content": "not base64!"}},
                    {"json": {"content": base64.b64encode(zipped({"a.md": "a"})).decode(), "kind": "notion"}}):
            answer = await http.post("/import/vault", params={"dry_run": "false"}, **bad)  # type: ignore[arg-type]
            assert answer.status_code == 422, (bad, answer.text)
    assert await counts(fable, alice) == (1, 0, 1)
    async with Client(build_server(fable, replace(alice, surface="mcp"))) as client:
        refused = await client.call_tool("import_vault", {"content": base64.b64encode(b"nope").decode(),
                                                          "dry_run": False})
        assert refused.is_error and "ZIP" in refused.content[0].text  # type: ignore[union-attr]
        ok = await client.call_tool("import_vault", {"content": base64.b64encode(zipped({"m.md": "m"})).decode()})
        assert json.loads(ok.content[0].text)["created"] == 1  # type: ignore[union-attr]
    assert await counts(fable, alice) == (1, 0, 1)


async def test_an_import_that_fails_leaves_no_image_file(fable: Fable, alice: Caller) -> None:
    """The database refuses the notes after the images were stored (a trigger: PostgreSQL's own
    error, as a full disk or a lost connection would be): the files go with the rolled-back rows."""
    picture = png(201, 7, 99)
    vault = zipped({"V/note.md": "# Note\n![[pic.png]]\n", "V/pic.png": picture})
    path = stored_at(fable.settings.fable_data_dir, hashlib.sha256(picture).hexdigest())
    async with fable.db.transaction() as s:
        await s.execute(text("CREATE FUNCTION refuse_import() RETURNS trigger LANGUAGE plpgsql AS "
                             "$$ BEGIN RAISE EXCEPTION 'disk full'; END $$"))
        await s.execute(text("CREATE TRIGGER refuse_import BEFORE INSERT ON notes FOR EACH ROW "
                             "EXECUTE FUNCTION refuse_import()"))
    try:
        # the server's own words stay in the log (issue 36 item 6): the client is told it was refused
        with pytest.raises(Unavailable, match="the server refused the statement"):
            await fable.dispatcher.run("import_vault", {"content": vault, "dry_run": False}, alice)
    finally:
        async with fable.db.transaction() as s:
            await s.execute(text("DROP TRIGGER refuse_import ON notes"))
            await s.execute(text("DROP FUNCTION refuse_import()"))
    assert not path.exists() and await counts(fable, alice) == (0, 0, 0)
    report = await fable.call("import_vault", {"content": vault, "dry_run": False}, alice)
    assert report["images"] == 1 and path.read_bytes() == picture  # the same import, once it can
