"""Backups on every surface: an admin's instance archive, a user's own archive restored into
their account; truncated, tampered, unknown-version or foreign archives are refused with nothing
written, on the dispatcher, REST and MCP; the CLI backs up and restores without an account."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import zipfile
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from sqlalchemy import delete, func, select
from support.backup import blob, empty
from support.mcp_clients import make_key
from support.pace import scaled
from support.servers import serve
from support.users import PASSWORD, make_user

from fable_core.db.models import AppLog, Note, Setting
from fable_core.errors import Forbidden, InvalidInput
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_mcp.server import build_server
from fable_web.app import create_app
from fable_web.cli import main


async def _notes(fable: Fable) -> int:
    async with fable.db.reading() as session:
        return (await session.execute(select(func.count()).select_from(Note))).scalar_one()


def _rewritten(data: bytes, change: Any) -> bytes:
    """The archive with its members passed through ``change(name, bytes)``."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            dst.writestr(info.filename, change(info.filename, src.read(info.filename)))
    return out.getvalue()


def _version_999(name: str, content: bytes) -> bytes:
    return json.dumps({**json.loads(content), "format": 999}).encode() if name == "manifest.json" else content


def _changed_byte(name: str, content: bytes) -> bytes:
    return content.replace(b"Compost", b"Compest", 1) if name == "tables/notes.jsonl" else content


async def test_bad_archives_are_refused_and_nothing_is_written(fable: Fable, world: dict[str, Any],
                                                               alice: Caller) -> None:
    data = await blob(fable, "backup_instance", alice)
    count = await _notes(fable)
    bad = {"truncated": data[: len(data) // 2], "checksum": _rewritten(data, _changed_byte),
           "version": _rewritten(data, _version_999), "junk": b"not a zip at all"}
    for what, archive in bad.items():
        with pytest.raises(InvalidInput, match="not a restorable Fable backup") as e:
            await fable.dispatcher.run("restore_backup", {"archive_file": archive}, alice)
        assert {"checksum": "fails its checksum", "version": "format 999"}.get(what, "") in str(e.value)
    assert await _notes(fable) == count

    key = await make_key(fable, alice)
    transport = httpx.ASGITransport(app=create_app(fable))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost/api",
                                 headers={"Authorization": f"Bearer {key}"}) as http:
        answer = await http.post("/backups/restore", content=bad["checksum"],
                                 headers={"Content-Type": "application/zip"})
        assert answer.status_code == 422 and "checksum" in answer.text
        refused = await http.get("/backups/instance")  # an admin's key: never the whole instance
        assert refused.status_code == 403 and refused.json()["error"]["details"]["reason"] == "session_only"
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost/api",
                                 headers={"Origin": "http://localhost"}) as browser:
        signed_in = await browser.post("/auth/login", json={"username": alice.username, "password": PASSWORD})
        assert signed_in.status_code == 200
        got = await browser.get("/backups/instance")  # the admin, signed in
        assert got.status_code == 200 and got.headers["content-type"] == "application/zip"
        assert "attachment" in got.headers["content-disposition"]
    async with Client(build_server(fable, replace(alice, surface="mcp"))) as client:
        refused = await client.call_tool("restore_backup", {"archive_file": base64.b64encode(bad["version"]).decode()})
        assert refused.is_error and "format 999" in refused.content[0].text  # type: ignore[union-attr]
    assert await _notes(fable) == count


async def test_a_user_restores_their_own_archive_only(fable: Fable, world: dict[str, Any], alice: Caller,
                                                      bob: Caller) -> None:
    mine = await blob(fable, "backup_mine", bob)
    with zipfile.ZipFile(io.BytesIO(mine)) as zf:
        manifest = json.loads(zf.read("manifest.json"))
    assert manifest["scope"] == "user" and manifest["tables"]["notes"]["rows"] == 1
    assert "api_keys" not in manifest["tables"] and manifest["tables"]["users"]["rows"] == 1
    with pytest.raises(Forbidden):
        await fable.dispatcher.run("backup_instance", {}, bob)
    with pytest.raises(Forbidden):
        await fable.dispatcher.run("restore_backup", {"archive_file": await blob(fable, "backup_instance", alice)}, bob)
    alices = await blob(fable, "backup_mine", alice)
    with zipfile.ZipFile(io.BytesIO(alices)) as zf:
        assert json.loads(zf.read("manifest.json"))["tables"]["shares"]["rows"] == 1  # her share to bob
    await empty(fable)
    alice = replace(alice, user_id=(await make_user(fable, "alice")).user_id)
    restored = await fable.call("restore_backup", {"archive_file": base64.b64encode(alices).decode()}, alice)
    assert restored["rows"]["notes"] == 4 and restored["rows"]["shares"] == 0 and restored["skipped"] == 1
    await empty(fable)
    alice = replace(alice, user_id=(await make_user(fable, "alice")).user_id)
    bob = replace(bob, user_id=(await make_user(fable, "bob")).user_id)
    await fable.call("set_setting", {"key": "assistant_name", "value": "Bo"}, bob)
    with pytest.raises(Forbidden, match="another account"):
        await fable.dispatcher.run("restore_backup", {"archive_file": mine}, alice)
    with pytest.raises(Exception, match="clashes"):  # bob's setting is still there: all or nothing
        await fable.dispatcher.run("restore_backup", {"archive_file": mine}, bob)
    before = await _notes(fable)
    async with fable.db.transaction() as session:
        await session.execute(delete(Setting).where(Setting.user_id == bob.user_id))
    restored = await fable.call("restore_backup", {"archive_file": base64.b64encode(mine).decode()}, bob)
    assert restored["scope"] == "user" and restored["rows"]["notes"] == 1
    assert await _notes(fable) == before + 1
    async with fable.db.reading() as session:  # the refused restores left no entry, this one one
        audited = (await session.execute(select(AppLog.username, AppLog.details).where(
            AppLog.action == "backup.restore"))).all()
    assert audited == [("bob", {"scope": "user", "rows": sum(restored["rows"].values()), "skipped": 0})]


async def test_the_cli_backs_up_and_restores_without_an_account(
        fable: Fable, world: dict[str, Any], database_url: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for name, value in {"DATABASE_URL": database_url, "FABLE_DATA_DIR": str(tmp_path), "LLM_PROVIDER": "none"}.items():
        monkeypatch.setenv(name, value)
    target = tmp_path / "fable.zip"
    assert await asyncio.to_thread(main, ["backup", "--output", str(target)]) == 0
    assert json.loads(capsys.readouterr().out)["tables"]["notes"] == 5
    count = await _notes(fable)
    await empty(fable)
    await fable.revocations.ready()
    heard = fable.revocations.heard
    assert await asyncio.to_thread(main, ["restore", str(target)]) == 0
    assert json.loads(capsys.readouterr().out)["rows"]["notes"] == 5
    assert await _notes(fable) == count
    # recorded as the tool records it: audited (by the operator) and announced to every process
    async with fable.db.reading() as session:
        audited = (await session.execute(select(AppLog.username, AppLog.surface, AppLog.user_id).where(
            AppLog.action == "backup.restore"))).all()
    assert [(name.startswith("cli:"), surface, user_id) for name, surface, user_id in audited] == [(True, "cli", None)]
    await _heard_more_than(fable, heard)


async def _heard_more_than(fable: Fable, heard: int) -> None:
    """Until this process hears another revocation notice (a restore's)."""
    async with asyncio.timeout(scaled(10)):
        while fable.revocations.heard <= heard:  # noqa: ASYNC110 - heard by the listener's connection
            await asyncio.sleep(0.02)


async def test_a_restore_through_the_tool_is_announced_as_the_cli_announces_it(
        fable: Fable, world: dict[str, Any], alice: Caller) -> None:
    archive = await blob(fable, "backup_instance", alice)
    await empty(fable)
    await fable.revocations.ready()
    heard = fable.revocations.heard
    restored = await fable.dispatcher.run("restore_backup", {"archive_file": archive}, alice)
    assert restored.rows["notes"] == 5  # type: ignore[attr-defined]
    await _heard_more_than(fable, heard)


async def test_a_restore_over_rest_is_spooled_up_to_its_own_limit(fable: Fable, world: dict[str, Any],
                                                                  bob: Caller) -> None:
    data = await blob(fable, "backup_mine", bob)
    small = Fable(fable.settings.model_copy(update={"fable_max_body_bytes": 1024, "fable_restore_max_bytes": 1000}),
                  fable.db)  # a general limit below the archive's size; the restore's own: 1000 + 64 KiB of framing
    assert len(data) > 1024
    key = await make_key(fable, bob)
    async with fable.db.transaction() as session:
        await session.execute(delete(Setting).where(Setting.user_id == bob.user_id))  # else it clashes
    count = await _notes(fable)

    async def chunked() -> AsyncIterator[bytes]:  # no Content-Length: counted as it comes
        for _ in range(20):
            yield b"x" * 8192

    async with serve(create_app(small)) as url, httpx.AsyncClient(
            base_url=f"{url}/api", headers={"Authorization": f"Bearer {key}"}) as http:
        for too_big in (b"x" * 70_000, chunked()):
            refused = await http.post("/backups/restore", content=too_big, headers={"Content-Type": "application/zip"})
            assert refused.status_code == 413 and refused.json()["error"]["type"] == "payload_too_large"
        assert await _notes(fable) == count
        assert (await http.post("/notes", json={"title": "x" * 2000})).status_code == 413  # the general limit holds
        answer = await http.post("/backups/restore", content=data, headers={"Content-Type": "application/zip"})
        assert answer.status_code == 200, answer.text
        form = await http.post("/backups/restore", files={"archive_file": ("mine.zip", data, "application/zip")})
        assert form.status_code == 409  # a multipart upload reaches the restore too: a second copy clashes
    assert answer.json()["rows"]["notes"] == 1 and await _notes(fable) == count + 1
    assert not any((fable.settings.fable_data_dir / "tmp").iterdir())  # the spooled body is gone
