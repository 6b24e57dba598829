"""A backup is one moment of the database: taken while people write, every table in it agrees
with every other (no version of a note it lacks, no note older than its own history)."""

from __future__ import annotations

import asyncio
import io
import json
import zipfile
from dataclasses import replace
from typing import Any

import pytest
from sqlalchemy import func, select
from support.backup import blob, empty, members, with_rows

from fable_core.db.models import Note
from fable_core.errors import InvalidInput
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

WRITERS = 8


async def _write(fable: Fable, who: Caller, n: int, stop: asyncio.Event) -> None:
    """One person writing until ``stop``: a note, then an edit of it (a version)."""
    i = 0
    while not stop.is_set():
        note = await fable.call("create_note", {"title": f"Writer {n} note {i}", "body": "first"}, who)
        await fable.call("update_note", {"note_id": note["id"], "body": "second"}, who)
        i += 1


def _table(zf: zipfile.ZipFile, manifest: dict[str, Any], name: str) -> list[dict[str, Any]]:
    entry = manifest["tables"][name]
    lines = zf.read(entry["member"]).decode().splitlines()
    return [dict(zip(entry["columns"], json.loads(line), strict=True)) for line in lines]


def _inconsistencies(archive: bytes) -> list[str]:
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        notes = {row["id"]: row for row in _table(zf, manifest, "notes")}
        versions = _table(zf, manifest, "note_versions")
    wrong = [f"version {v['version']} of note {v['note_id']}, which the archive lacks"
             for v in versions if v["note_id"] not in notes]
    newest: dict[int, int] = {}
    for v in versions:
        newest[v["note_id"]] = max(newest.get(v["note_id"], 0), v["version"])
    wrong += [f"note {i} at version {notes[i]['version']} with a version {n} stored" for i, n in newest.items()
              if i in notes and notes[i]["version"] < n]
    return wrong


async def test_a_snapshot_session_does_not_see_what_commits_after_it_began(fable: Fable, call) -> None:
    async with fable.db.snapshot() as seen:
        before = (await seen.execute(select(func.count()).select_from(Note))).scalar_one()
        await call("create_note", title="Committed meanwhile", body="x")
        again = (await seen.execute(select(func.count()).select_from(Note))).scalar_one()
    assert again == before


async def test_backups_taken_while_eight_people_write_are_each_one_moment(fable: Fable, alice: Caller) -> None:
    stop = asyncio.Event()
    session = replace(alice, credential="session", surface="web")

    writers = [asyncio.create_task(_write(fable, alice, n, stop)) for n in range(WRITERS)]
    try:
        await asyncio.sleep(0.3)
        archives = []
        for _ in range(3):
            blob = await fable.dispatcher.run("backup_mine", {}, session)
            archives.append(blob.content)  # type: ignore[attr-defined]
    finally:
        stop.set()
        await asyncio.gather(*writers)
    for archive in archives:
        assert _inconsistencies(archive) == []


async def _notes(fable: Fable) -> int:
    async with fable.db.reading() as session:
        return int((await session.execute(select(func.count()).select_from(Note))).scalar_one())


async def test_an_archive_that_contradicts_itself_is_refused_whole_naming_what(fable: Fable, alice: Caller) -> None:
    note = await fable.call("create_note", {"title": "Has a history", "body": "one"}, alice)
    await fable.call("update_note", {"note_id": note["id"], "body": "two"}, alice)
    data = await blob(fable, "backup_instance", replace(alice, credential="session"))
    at_id = members(data)["notes"][0].index("id")
    without = with_rows(data, "notes", lambda columns, rows: [r for r in rows if r[at_id] != note["id"]])
    at_version = members(data)["notes"][0].index("version")
    behind = with_rows(data, "notes", lambda columns, rows: [
        [*r[:at_version], 1, *r[at_version + 1:]] if r[at_id] == note["id"] else r for r in rows])
    before = await _notes(fable)
    for archive, says in [(without, f"name notes the archive lacks (note_id {note['id']}"),
                          (behind, f"older than their own history (notes {note['id']})")]:
        with pytest.raises(InvalidInput, match="contradicts itself") as refused:
            await fable.call("restore_backup", {"archive_file": archive}, replace(alice, credential="session"))
        assert says in refused.value.message and "nothing was restored" in refused.value.message
    assert await _notes(fable) == before


async def test_a_backup_taken_under_writes_restores_into_an_empty_instance_where_every_note_can_be_edited(
        fable: Fable, alice: Caller) -> None:
    stop = asyncio.Event()
    writers = [asyncio.create_task(_write(fable, alice, n, stop)) for n in range(WRITERS)]
    try:
        await asyncio.sleep(0.3)
        data = await blob(fable, "backup_instance", replace(alice, credential="session"))
    finally:
        stop.set()
        await asyncio.gather(*writers)
    archived = members(data)
    await empty(fable)
    restored = await fable.call("restore_backup", {"archive_file": data}, Caller.at_shell("test"))
    assert restored["rows"]["notes"] == len(archived["notes"]) - 1 and restored["skipped"] == 0
    assert restored["rows"]["note_versions"] == len(archived["note_versions"]) - 1
    async with fable.db.reading() as session:
        notes = (await session.execute(select(Note.id, Note.user_id))).all()
    for note_id, user_id in notes:
        owner = Caller(user_id=user_id, username="x", surface="web")
        await fable.call("update_note", {"note_id": note_id, "body": "edited after the restore"}, owner)
