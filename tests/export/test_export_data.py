"""export_data: the Markdown ZIP and the JSON document, on the dispatcher, REST, MCP and the CLI."""

from __future__ import annotations

import asyncio
import io
import json
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from sqlalchemy import select, text
from support.snapshots import assert_matches
from support.users import make_user

from fable_core.data.export import export
from fable_core.data.export.sections import LEFT_OUT, SECTIONS, json_schema
from fable_core.db.models import AppLog, Base, Note
from fable_core.errors import Conflict, InvalidInput, Unavailable
from fable_core.runtime import Fable
from fable_core.tools.binary import Download
from fable_core.tools.caller import Caller

_SCHEMA = Path(__file__).parents[2] / "docs" / "export.schema.json"


async def _export(fable: Fable, caller: Caller, fmt: str) -> bytes:
    result = await fable.dispatcher.run("export_data", {"format": fmt}, caller)
    assert isinstance(result, Download)
    return b"".join([chunk async for chunk in result.stream()])


def _parse(text: str) -> tuple[dict[str, Any], str]:
    """Front matter (``key: <JSON>`` lines between ``---``) and the body after it."""
    head, _, body = text.removeprefix("---\n").partition("\n---\n")
    meta = {}
    for line in head.splitlines():
        key, _, value = line.partition(": ")
        meta[key] = json.loads(value)
    return meta, body.removeprefix("\n")


async def test_markdown_zip_has_a_file_per_note_with_front_matter(fable: Fable, call: Any, alice: Caller, bob: Caller,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(export, "PAGE", 2)  # several pages, each read while the one before is written
    project = await call("create_project", title="Home/Garden")
    task = await call("create_note", title="Plan", body="See [[Seeds list]] and [[Plan|the plan]].",
                      tags=["garden"], project_id=project["id"], status="todo", priority="high", due_date="2026-12-24")
    async with fable.db.transaction() as session:  # tools refuse a second "Plan"; imports and old data have them
        session.add_all([Note(user_id=alice.user_id, title="Plan", body="second", project_id=project["id"]),
                         Note(user_id=alice.user_id, title="plan", body="third", project_id=project["id"])])
    await call("create_note", title="a/b\\c:d", body="")
    await call("create_note", title="CON", body="reserved")
    await call("create_note", title="Bob's secret", body="not alice's", as_=bob)

    archive = zipfile.ZipFile(io.BytesIO(await _export(fable, alice, "markdown")))
    names = sorted(archive.namelist())
    assert names == ["CON_.md", "Home-Garden/Plan (2).md", "Home-Garden/Plan.md", "Home-Garden/plan (3).md",
                     "a-b-c-d.md"]
    meta, body = _parse(archive.read("Home-Garden/Plan.md").decode())
    assert body == "See [[Seeds list]] and [[Plan|the plan]].\n"
    assert meta["title"] == "Plan" and meta["id"] == task["id"] and meta["kind"] == "task"
    assert (meta["tags"], meta["status"], meta["priority"], meta["due"]) == (["garden"], "todo", "high", "2026-12-24")
    assert meta["project"] == "Home/Garden" and meta["created"] and meta["updated"]
    assert _parse(archive.read("a-b-c-d.md").decode())[0]["title"] == "a/b\\c:d"
    assert not any(b"not alice's" in archive.read(n) for n in names)  # bob's notes are his


async def test_json_export_holds_every_section_and_only_mine(fable: Fable, call: Any, alice: Caller, bob: Caller,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(export, "PAGE", 1)
    project = await call("create_project", title="Work")
    note = await call("create_note", title="Mine", body="hello", project_id=project["id"])
    await call("update_note", note_id=note["id"], body="hello again")
    await call("create_note", title="His", body="bob's", as_=bob)
    await call("set_setting", key="timezone", value="Europe/Paris")  # a table keyed by (user_id, key)
    await call("set_setting", key="timezone", value="Asia/Tokyo", as_=bob)

    document = json.loads(await _export(fable, alice, "json"))
    assert document["format"] == "fable-export" and document["version"] == 1
    assert document["user"]["username"] == alice.username
    jsonschema.Draft202012Validator(json.loads(_SCHEMA.read_text())).validate(document)
    assert [n["title"] for n in document["notes"]] == ["Mine"]
    assert document["notes"][0]["body"] == "hello again" and "user_id" not in document["notes"][0]
    assert [p["title"] for p in document["projects"]] == ["Work"]
    assert [(s["key"], s["value"]) for s in document["settings"]] == [("timezone", "Europe/Paris")]
    assert document["note_versions"] and all(v["note_id"] == note["id"] for v in document["note_versions"])
    async with fable.db.reading() as session:
        audited = (await session.execute(select(AppLog.action, AppLog.details).where(
            AppLog.category == "audit", AppLog.user_id == alice.user_id))).all()
    assert ("export", {"format": "json"}) in [tuple(a) for a in audited]


def test_the_documented_schema_is_current() -> None:
    assert_matches(_SCHEMA, json.dumps(json_schema(), indent=2) + "\n", env_var="UPDATE_DOCS",
                   command="pytest tests/export", what="the export's JSON Schema")


def test_every_owned_table_is_exported_or_left_out_on_purpose() -> None:
    owned = {t.name for t in Base.metadata.sorted_tables if {"user_id", "owner_id"} & set(t.columns.keys())}
    decided = {s.table.name for s in SECTIONS} | set(LEFT_OUT)
    assert owned - decided == set(), "decide: export the table (SECTIONS) or say why not (LEFT_OUT)"


async def test_bad_format_is_refused_everywhere(fable: Fable, alice: Caller, http: Any) -> None:
    with pytest.raises(InvalidInput):
        await fable.dispatcher.run("export_data", {"format": "pdf"}, alice)
    async with http(alice) as c:
        answer = await c.get("/export", params={"format": "pdf"})
    assert answer.status_code == 422 and answer.json()["error"]["type"] == "invalid_input"


async def test_rest_streams_an_attachment(call: Any, alice: Caller, http: Any) -> None:
    await call("create_note", title="Streamed", body="over HTTP")
    async with http(alice) as c, c.stream("GET", "/export", params={"format": "markdown"}) as answer:
        assert answer.status_code == 200 and answer.headers["content-type"] == "application/zip"
        assert answer.headers["content-disposition"].startswith('attachment; filename="fable-alice-')
        assert "content-length" not in answer.headers  # streamed, not built first
        data = b"".join([chunk async for chunk in answer.aiter_bytes()])
    assert zipfile.ZipFile(io.BytesIO(data)).namelist() == ["Streamed.md"]
    async with http(alice) as c:
        answer = await c.get("/export", params={"format": "json"})
    assert answer.headers["content-disposition"].endswith('.json"') and answer.json()["notes"][0]["title"] == "Streamed"


async def test_cli_writes_the_download_to_output(database_url: str, tmp_path: Path, call: Any,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from fable_web.cli import main

    for name, value in {"DATABASE_URL": database_url, "FABLE_DATA_DIR": str(tmp_path), "LLM_PROVIDER": "none"}.items():
        monkeypatch.setenv(name, value)
    await call("create_note", title="On disk", body="via the CLI")
    target = tmp_path / "export.zip"
    capsys.readouterr()
    status = await asyncio.to_thread(main, ["call", "export_data", '{"format": "markdown"}', "--output", str(target),
                                            "--user", "alice"])
    out = json.loads(capsys.readouterr().out)
    assert status == 0 and out["content_type"] == "application/zip" and out["bytes"] == target.stat().st_size
    assert zipfile.ZipFile(target).namelist() == ["On disk.md"]


async def test_mcp_does_not_offer_it_and_never_streams_it(fable: Fable, alice: Caller) -> None:
    from mcp import Client

    from fable_mcp.server import build_server

    async with Client(build_server(fable, replace(alice, surface="mcp"))) as client:
        assert "export_data" not in {t.name for t in (await client.list_tools()).tools}
        refused = await client.call_tool("export_data", {"format": "pdf"})
        described = await client.call_tool("export_data", {"format": "json"})
    assert refused.is_error and "format" in refused.content[0].text  # type: ignore[union-attr]
    told = json.loads(described.content[0].text)  # type: ignore[union-attr]
    assert not described.is_error and told["content_type"] == "application/json" and "REST" in told["note"]


async def _read_into(answer: httpx.Response, received: bytearray) -> None:
    async for chunk in answer.aiter_bytes():
        received += chunk


async def test_an_export_cut_short_is_detectable(fable: Fable, call: Any, alice: Caller, http: Any) -> None:
    for i in range(3):
        await call("create_note", title=f"Note {i}", body="words " * 50)
    document = await _export(fable, alice, "json")
    whole = json.loads(document)
    assert list(whole)[-2:] == ["rows", "complete"] and whole["complete"] is True
    assert whole["rows"] == {s.name: len(whole[s.name]) for s in SECTIONS} and whole["rows"]["notes"] == 3
    for cut in (len(document) // 3, len(document) - 3):  # cut short: not a document, or no marker
        with pytest.raises(json.JSONDecodeError):
            json.loads(document[:cut])
    archive = await _export(fable, alice, "markdown")
    for cut in (len(archive) // 2, len(archive) - 1):  # no central directory: not a ZIP
        with pytest.raises(zipfile.BadZipFile):
            zipfile.ZipFile(io.BytesIO(archive[:cut]))

    # the database fails mid-download (after the 200 went out): the client sees the stream break
    async with fable.db.transaction() as session:
        await session.execute(text("ALTER TABLE shares RENAME COLUMN permission TO permission_gone"))
    try:
        async with http(alice) as c, c.stream("GET", "/export", params={"format": "json"}) as answer:
            assert answer.status_code == 200
            received = bytearray()
            with pytest.raises(httpx.RemoteProtocolError):
                await _read_into(answer, received)
    finally:
        async with fable.db.transaction() as session:
            await session.execute(text("ALTER TABLE shares RENAME COLUMN permission_gone TO permission"))
    assert b'"complete":true' not in received


async def test_an_export_reads_one_moment_whatever_is_written_while_it_downloads(
    fable: Fable, call: Any, alice: Caller
) -> None:
    """Issue 36, item 1: writes made while an export downloads are in none of it. Before, each
    page was read in a phase of its own: the notes read first lacked a note written meanwhile
    whose versions, read later, were in — a version of a note the export did not hold."""
    kept = [await call("create_note", title=f"Big {i}", body=f"paragraph {i} " * 12_000) for i in range(3)]
    result = await fable.dispatcher.run("export_data", {"format": "json"}, alice)
    assert isinstance(result, Download)
    chunks = result.stream()
    received = [await anext(chunks)]  # the notes, over the first chunk's size: the rest not read yet
    await call("create_note", title="Written during the export", body="too late")
    await call("update_note", note_id=kept[0]["id"], body="changed during the export")
    received += [chunk async for chunk in chunks]
    document = json.loads(b"".join(received))
    notes = {n["id"] for n in document["notes"]}
    assert notes >= {k["id"] for k in kept} and len(notes) == document["rows"]["notes"]
    assert "Written during the export" not in {n["title"] for n in document["notes"]}
    assert {v["note_id"] for v in document["note_versions"]} <= notes, "no version of a note it lacks"
    assert all(v.get("body") != "changed during the export" for v in document["note_versions"])


async def test_exports_past_the_reading_limit_are_refused_before_they_begin(
    fable: Fable, call: Any, alice: Caller
) -> None:
    """Each export being read holds a connection of its own (outside the pool) for its download:
    one per person at a time, and at most DETACHED at once per process; one more is refused with
    a status, nothing begun."""
    from fable_core.db.database import DETACHED

    readers = [alice, *[await make_user(fable, f"reader{i}", password=None) for i in range(DETACHED - 1)]]
    reading = []
    try:
        for reader in readers:
            await fable.call("create_note", {"title": "Something", "body": "to export"}, reader)
            result = await fable.dispatcher.run("export_data", {"format": "markdown"}, reader)
            assert isinstance(result, Download)
            chunks = result.stream()
            reading.append(chunks)
            await anext(chunks)  # its snapshot is open
            if reader is alice:  # a second of hers waits for the first
                with pytest.raises(Conflict, match="an export of yours is being downloaded"):
                    await fable.dispatcher.run("export_data", {"format": "json"}, alice)
        latecomer = await make_user(fable, "latecomer", password=None)
        with pytest.raises(Unavailable, match="exports are being read here at once"):
            await fable.dispatcher.run("export_data", {"format": "json"}, latecomer)
    finally:
        for chunks in reading:
            await chunks.aclose()
    assert isinstance(await fable.dispatcher.run("export_data", {"format": "json"}, alice), Download)
