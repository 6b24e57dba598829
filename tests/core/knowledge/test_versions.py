from __future__ import annotations

from fable_core.errors import InvalidInput, NotFound


async def test_every_change_keeps_a_version(call) -> None:
    note = await call("create_note", title="Doc", body="one")
    await call("update_note", note_id=note["id"], body="one\ntwo")
    await call("edit_note", note_id=note["id"], operation="append", text="three")
    await call("update_note", note_id=note["id"], tags=["x"])
    task = await call("convert_note", note_id=note["id"], to="task")
    await call("reschedule_task", note_id=note["id"], due_date="2026-12-01")
    await call("complete_task", note_id=note["id"])
    versions = await call("list_note_versions", note_id=note["id"])
    numbers = [v["version"] for v in versions["items"]]
    assert numbers == [7, 6, 5, 4, 3, 2, 1] and task["version"] == 5
    assert [v["current"] for v in versions["items"]] == [True] + [False] * 6
    assert versions["items"][-1]["body_length"] == 3


async def test_versions_page(call) -> None:
    note = await call("create_note", title="Doc")
    for i in range(4):
        await call("update_note", note_id=note["id"], body=str(i))
    first = await call("list_note_versions", note_id=note["id"], limit=2)
    second = await call("list_note_versions", note_id=note["id"], limit=2, cursor=first["next_cursor"])
    third = await call("list_note_versions", note_id=note["id"], limit=2, cursor=second["next_cursor"])
    pages = [first, second, third]
    assert [v["version"] for p in pages for v in p["items"]] == [5, 4, 3, 2, 1]
    assert third["next_cursor"] is None


async def test_diff_between_versions(call) -> None:
    note = await call("create_note", title="Doc", body="alpha\nbeta\ngamma")
    await call("update_note", note_id=note["id"], body="alpha\nBETA\ngamma\ndelta")
    await call("update_note", note_id=note["id"], title="Document")
    diff = await call("diff_note_versions", note_id=note["id"], from_version=1)
    assert diff["to_version"] == 3 and diff["title_changed"] is True
    assert diff["added_lines"] == 2 and diff["removed_lines"] == 1
    assert "-beta" in diff["diff"] and "+BETA" in diff["diff"] and "+delta" in diff["diff"]
    none = await call("diff_note_versions", note_id=note["id"], from_version=2, to_version=3)
    assert none["diff"] == "" and none["title_changed"] is True


async def test_restore_brings_back_title_body_and_tags_as_a_new_version(call) -> None:
    note = await call("create_note", title="Doc", body="original", tags=["a"])
    await call("update_note", note_id=note["id"], title="Renamed", body="changed", tags=["b"])
    restored = await call("restore_note_version", note_id=note["id"], version=1)
    assert restored["title"] == "Doc" and restored["tags"] == ["a"] and restored["version"] == 3
    assert (await call("read_note", note_id=note["id"]))["body"] == "original"
    assert len((await call("list_note_versions", note_id=note["id"]))["items"]) == 3


async def test_unknown_versions_write_nothing(call, fails, snapshot) -> None:
    note = await call("create_note", title="Doc")
    before = await snapshot()
    await fails(call("restore_note_version", note_id=note["id"], version=7), NotFound)
    await fails(call("diff_note_versions", note_id=note["id"], from_version=9), NotFound)
    await fails(call("restore_note_version", note_id=note["id"], version=0), InvalidInput)
    await fails(call("list_note_versions", note_id=note["id"], cursor="???"), InvalidInput)
    assert await snapshot() == before


async def test_each_version_says_what_it_changed(call) -> None:
    note = await call("create_note", title="Doc", body="alpha\nbeta\ngamma", tags=["a", "b"])
    await call("update_note", note_id=note["id"], title="Document")
    await call("update_note", note_id=note["id"], body="alpha\nBETA\ngamma\ndelta")
    await call("update_note", note_id=note["id"], add_tags=["work"], remove_tags=["a"])
    await call("edit_note", note_id=note["id"], operation="replace", find="gamma\ndelta", text="delta\ngamma")
    await call("convert_note", note_id=note["id"], to="task")
    await call("restore_note_version", note_id=note["id"], version=1)
    versions = (await call("list_note_versions", note_id=note["id"]))["items"]
    assert [(v["version"], v["changes"]) for v in versions] == [
        (7, "title changed; body +1/-2 lines; tags +a -work"),
        (6, "title, body and tags unchanged"),
        (5, "title, body and tags unchanged"),   # lines moved, none added or removed
        (4, "tags +work -a"),
        (3, "body +2/-1 lines"),
        (2, "title changed"),
        (1, "created"),
    ]
    assert [v["body_length"] for v in versions] == [16, 22, 22, 22, 22, 16, 16]


async def test_a_rename_that_rewrites_a_link_says_so_in_the_linking_note(call) -> None:
    target = await call("create_note", title="Old name")
    source = await call("create_note", title="Source", body="intro\nsee [[Old name]]\nend")
    [imported] = (await call("import_notes", notes=[{"title": "Batch", "body": "one\ntwo"}]))["ids"]
    await call("update_note", note_id=target["id"], title="New name")
    versions = (await call("list_note_versions", note_id=source["id"]))["items"]
    assert [v["changes"] for v in versions] == ["body +1/-1 lines", "created"]
    assert (await call("list_note_versions", note_id=imported))["items"][0] | {"id": 0, "created_at": 0} == {
        "id": 0, "version": 1, "title": "Batch", "body_length": 7, "created_at": 0, "current": True,
        "changes": "created"}
