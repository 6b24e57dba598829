"""import_notes: many notes in one call and one transaction, under the rules create_note keeps."""

from __future__ import annotations

import pytest

from fable_core.errors import Conflict, InvalidInput, NotFound


async def _backlinks(call, note_id: int) -> list[int]:
    return sorted(b["id"] for b in (await call("get_backlinks", note_id=note_id))["items"])


async def test_a_batch_becomes_notes_and_tasks_with_versions_and_links(call) -> None:
    waiting = await call("create_note", title="Index", body="see [[Vault Home]]")
    old = await call("create_note", title="Existing note")
    result = await call("import_notes", notes=[
        {"title": "Vault Home", "body": "to [[Existing note]] and [[Daily log]]", "tags": ["Vault"]},
        {"title": "Daily log", "body": "back to [[vault home]]"},
        {"title": "Pay rent", "due_date": "2026-12-31", "priority": "high"},
        {"title": "Finished thing", "status": "done"},
    ])
    assert result["created"] == 4 and result["skipped"] == []
    home, daily, rent, done = result["ids"]
    assert (await call("read_note", note_id=home))["tags"] == ["vault"]
    task = await call("read_note", note_id=rent)
    assert (task["kind"], task["status"], task["due_date"]) == ("task", "todo", "2026-12-31")
    assert (await call("read_note", note_id=done))["completed_at"] is not None
    assert await _backlinks(call, home) == sorted([waiting["id"], daily])  # old link now resolved
    assert await _backlinks(call, old["id"]) == [home]
    assert await _backlinks(call, daily) == [home]
    versions = await call("list_note_versions", note_id=home)
    assert [v["version"] for v in versions["items"]] == [1]
    found = await call("search_notes", query="rent")
    assert [hit["id"] for hit in found["items"]] == [rent]


async def test_duplicates_are_skipped_and_reported(call) -> None:
    old = await call("create_note", title="Weekly planning notes")
    result = await call("import_notes", notes=[
        {"title": "weekly planning notes"},          # same key as an existing note
        {"title": "Weekly planing notes"},           # fuzzy duplicate of it
        {"title": "Standup 2026-12-01"},
        {"title": "Standup 2026-12-02"},             # numbers differ: not a duplicate
        {"title": "Standup 2026-12-01"},             # repeats an earlier entry of the batch
        {"title": "Fresh idea"},
    ])
    assert result["created"] == 3
    assert result["ids"][0] is None and result["ids"][1] is None and result["ids"][4] is None
    skipped = {s["index"]: s for s in result["skipped"]}
    assert skipped[0]["existing_note_id"] == old["id"] and "same title" in skipped[0]["reason"]
    assert skipped[1]["existing_note_id"] == old["id"] and "similar" in skipped[1]["reason"]
    assert skipped[4]["existing_note_id"] is None and "earlier note of this batch" in skipped[4]["reason"]
    listed = await call("list_notes", sort="title")
    assert [n["title"] for n in listed["items"]] == [
        "Fresh idea", "Standup 2026-12-01", "Standup 2026-12-02", "Weekly planning notes"]


async def test_fail_on_duplicate_imports_nothing(call, fails, snapshot) -> None:
    await call("create_note", title="Taken")
    before = await snapshot()
    err = await fails(call("import_notes", on_duplicate="fail",
                           notes=[{"title": "New one"}, {"title": "taken"}]), Conflict)
    assert "#1 'taken'" in err.message and "Nothing was imported" in err.message
    assert await snapshot() == before


@pytest.mark.parametrize(("notes", "error"), [
    ([], InvalidInput),
    ([{"title": ""}], InvalidInput),
    ([{"title": "x", "colour": "red"}], InvalidInput),
    ([{"title": "ok"}, {"title": "Bad tags", "tags": ["no spaces allowed"]}], InvalidInput),
    ([{"title": "ok"}, {"title": "Repeats", "recurrence_rule": "FREQ=WEEKLY"}], InvalidInput),
    ([{"title": "ok"}, {"title": "Where", "project": "No such project"}], NotFound),
    ([{"title": "ok"}, {"title": "Where", "project_id": 99999}], NotFound),
    ([{"title": f"n{i}"} for i in range(501)], InvalidInput),
])
async def test_bad_input_imports_nothing(call, fails, snapshot, notes, error) -> None:
    before = await snapshot()
    await fails(call("import_notes", notes=notes), error)
    assert await snapshot() == before


async def test_projects_by_name_and_id_and_other_users_projects_are_not_found(call, fails, bob) -> None:
    mine = await call("create_project", title="Garden")
    theirs = await call("create_project", title="Secret", as_=bob)
    result = await call("import_notes", notes=[
        {"title": "Seeds", "project": "garden"}, {"title": "Compost", "project_id": mine["id"]}])
    for note_id in result["ids"]:
        assert (await call("read_note", note_id=note_id))["project_id"] == mine["id"]
    await fails(call("import_notes", notes=[{"title": "Peek", "project_id": theirs["id"]}]), NotFound)


async def test_other_users_titles_are_not_duplicates_and_links_stay_per_user(call, bob) -> None:
    theirs = await call("create_note", title="Shared name", as_=bob)
    result = await call("import_notes", notes=[{"title": "Shared name"}, {"title": "L", "body": "[[Shared name]]"}])
    assert result["created"] == 2
    assert await _backlinks(call, result["ids"][0]) == [result["ids"][1]]
    assert (await call("get_backlinks", note_id=theirs["id"], as_=bob))["items"] == []


async def test_short_titles_duplicate_only_the_same_title(call) -> None:
    old = await call("create_note", title="ABC")
    result = await call("import_notes", notes=[{"title": "abc!"}, {"title": "abd"}, {"title": "Q"}])
    assert result["created"] == 2 and result["ids"][0] is None
    assert result["skipped"][0]["existing_note_id"] == old["id"]
    assert "same title" in result["skipped"][0]["reason"]
