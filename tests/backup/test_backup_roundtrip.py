"""A round trip: a rich world backed up, restored into an empty instance and into one already in
use (every id remapped, foreign keys and wikilinks intact), each table's content compared through
the id maps; every table is either covered or consciously excluded."""

from __future__ import annotations

import io
from collections import Counter
from typing import Any

from sqlalchemy import JSON, func, select
from support.backup import blob, empty, members

from fable_core.data.backup import archive
from fable_core.db.models import Base, Note, NoteLink
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


def test_every_table_is_covered_or_excluded() -> None:
    tables = {t.name for t in Base.metadata.sorted_tables}
    assert not archive.COVERED & set(archive.EXCLUDED)
    assert tables == archive.COVERED | set(archive.EXCLUDED), "add the new table to COVERED or EXCLUDED"


def test_every_json_column_is_remapped_or_declared_id_free() -> None:
    json_columns = {(t.name, c.name) for t in Base.metadata.sorted_tables if t.name in archive.COVERED
                    for c in t.columns if isinstance(c.type, JSON)}
    assert not set(archive.JSON_IDS) & set(archive.JSON_ID_FREE)
    assert json_columns == set(archive.JSON_IDS) | set(archive.JSON_ID_FREE), \
        "a JSON column holding row ids goes in JSON_IDS (remapped on restore), else in JSON_ID_FREE with its reason"
    assert set(archive.ID_KEYS.values()) <= archive.COVERED


def _json(value: Any, maps: dict[str, dict[int, int]], ids: str | None = None) -> Any:
    """A JSON value as it must be after the restore: ``<table>_id`` keys (``id`` in the context's
    lists: notes) through the maps."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            table = archive.ID_KEYS.get(key) or (ids if key == "id" else None)
            out[key] = maps[table].get(item) if table and isinstance(item, int) else \
                _json(item, maps, "notes" if key in ("used", "suggested", "attached") else None)
        return out
    if isinstance(value, list):
        return [_json(item, maps, ids) for item in value]
    return value


def _translated(before: dict[str, list[list[Any]]], maps: dict[str, dict[int, int]]) -> dict[str, Counter[str]]:
    """The archived rows as they must be after the restore: each id and key through the maps."""
    out: dict[str, Counter[str]] = {}
    for name, (columns, *rows) in before.items():
        table = Base.metadata.tables[name]
        targets = {i: fk.column.table.name for i, c in enumerate(columns) for fk in table.c[c].foreign_keys}
        if "id" in columns and [c.name for c in table.primary_key.columns] == ["id"]:
            targets[columns.index("id")] = name
        remapped = {i for i, c in enumerate(columns) if (name, c) in archive.JSON_IDS}
        out[name] = Counter(repr([maps[targets[i]].get(v) if i in targets and v is not None
                                  else _json(v, maps) if i in remapped else v
                                  for i, v in enumerate(row)]) for row in rows)
    return out


async def _restore(fable: Fable, data: bytes) -> archive.Summary:
    zf, manifest = archive.read_archive(io.BytesIO(data))
    async with fable.db.transaction() as session:
        return await archive.restore(session, zf, manifest)


async def test_round_trip_into_an_empty_and_a_used_instance(fable: Fable, world: dict[str, Any], alice: Caller,
                                                            call: Any) -> None:
    data = await blob(fable, "backup_instance", alice)
    before = members(data)
    assert len(before["notes"]) == 1 + 5 and len(before["note_versions"]) >= 1 and before["shares"][1:]
    assert before["events"][1:] and before["milestones"][1:] and before["task_logs"][1:] and before["moments"][1:]
    for excluded in archive.EXCLUDED:
        assert excluded not in before

    await empty(fable)
    summary = await _restore(fable, data)
    assert summary["notes"] == 5 and summary["events"] == 2 and summary["messages"] == 1 and summary["skipped"] == 0
    assert summary.maps["notes"][world["target"]["id"]] != world["target"]["id"]  # so JSON ids must follow
    after = members(await blob(fable, "backup_instance", alice))
    expected = _translated(before, summary.maps)
    for name, (_, *rows) in after.items():
        assert Counter(repr(r) for r in rows) == expected[name], name

    await empty(fable)  # now an instance in use: carol's notes hold the first ids
    async with fable.db.transaction() as session:
        from fable_core.identity.accounts import create_user
        carol = await create_user(session, "carol")
        for i in range(7):
            session.add(Note(user_id=carol.id, title=f"Carol {i}", title_key=f"carol {i}", body=""))
    summary = await _restore(fable, data)
    assert min(summary.maps["notes"].values()) > 7 and summary.maps["users"]
    after = members(await blob(fable, "backup_instance", alice))
    expected = _translated(before, summary.maps)
    for name, (_, *rows) in after.items():
        assert not expected[name] - Counter(repr(r) for r in rows), name
    async with fable.db.reading() as session:  # the wikilink still points at Compost, under its new id
        compost = summary.maps["notes"][world["target"]["id"]]
        linked = (await session.execute(select(func.count()).select_from(NoteLink)
                                        .where(NoteLink.target_id == compost))).scalar()
        assert linked == 1


async def test_a_restore_into_the_instance_in_use_keeps_its_own_instance_settings(
    fable: Fable, alice: Caller, call: Any
) -> None:
    """Issue 37 item 9: ``fable restore`` into an instance in use failed on a raw
    ``duplicate key … "instance_settings_pkey"``; the instance's own settings now stay, the
    archive's are taken where this instance has none."""
    from fable_core.db.models import InstanceSetting

    await call("create_note", title="Kept twice", body="restored beside itself")
    async with fable.db.transaction() as session:
        session.add_all([InstanceSetting(key="registration", value="invite"),
                          InstanceSetting(key="archived_only", value="from the archive")])
    data = await blob(fable, "backup_instance", alice)
    async with fable.db.transaction() as session:
        await session.execute(InstanceSetting.__table__.delete().where(InstanceSetting.key == "archived_only"))
        await session.execute(InstanceSetting.__table__.update().where(InstanceSetting.key == "registration")
                              .values(value="open"))
    summary = await _restore(fable, data)  # the instance in use, its people and settings there
    assert summary.maps["notes"]
    async with fable.db.reading() as session:
        settings = dict((await session.execute(select(InstanceSetting.key, InstanceSetting.value))).all())
    assert settings["registration"] == "open", "the instance's own setting stays"
    assert settings["archived_only"] == "from the archive"
