from __future__ import annotations

from fable_core.knowledge.wikilinks import parse_links


def test_parse_links_keys_titles_and_labels() -> None:
    body = "See [[Project: Alpha]], [[project alpha|the project]] and [[Beta | b]]; not [[ ]] or [[a\nb]]."
    assert parse_links(body) == {"project alpha": "Project: Alpha", "beta": "Beta"}


async def _backlinks(call, note_id: int) -> list[int]:
    return [b["id"] for b in (await call("get_backlinks", note_id=note_id))["items"]]


async def test_links_resolve_case_insensitively_with_labels(call) -> None:
    target = await call("create_note", title="Roadmap 2027")
    plain = await call("create_note", title="A", body="see [[roadmap 2027]]")
    labelled = await call("create_note", title="B", body="line one\nsee [[ROADMAP 2027|the plan]] here")
    links = (await call("get_backlinks", note_id=target["id"]))["items"]
    assert [b["id"] for b in links] == [labelled["id"], plain["id"]]
    assert links[0]["snippet"] == "see the plan here"  # the line as plain text: the link as its label


async def test_unresolved_links_resolve_when_the_note_appears(call) -> None:
    source = await call("create_note", title="Index", body="[[Later note]] and [[Other]]")
    later = await call("create_note", title="later note")
    assert await _backlinks(call, later["id"]) == [source["id"]]


async def test_a_rename_can_resolve_waiting_links(call) -> None:
    source = await call("create_note", title="Index", body="[[Final name]]")
    note = await call("create_note", title="Draft name")
    assert await _backlinks(call, note["id"]) == []
    await call("update_note", note_id=note["id"], title="Final Name")
    assert await _backlinks(call, note["id"]) == [source["id"]]


async def test_rename_keeps_backlinks_and_rewrites_link_text(call) -> None:
    target = await call("create_note", title="Old Name")
    source = await call("create_note", title="Source", body="a [[old name]] b [[Old Name|label]] c [[Else]]")
    renamed = await call("update_note", note_id=target["id"], title="New Name")
    assert renamed["title"] == "New Name"
    assert await _backlinks(call, target["id"]) == [source["id"]]
    body = (await call("read_note", note_id=source["id"]))["body"]
    assert body == "a [[New Name]] b [[New Name|label]] c [[Else]]"
    diff = await call("diff_note_versions", note_id=source["id"], from_version=1)
    assert diff["to_version"] == 2 and "+a [[New Name]]" in diff["diff"]


async def test_editing_the_body_updates_the_links(call) -> None:
    a = await call("create_note", title="A")
    b = await call("create_note", title="B")
    source = await call("create_note", title="Source", body="[[A]]")
    await call("edit_note", note_id=source["id"], operation="replace", find="[[A]]", text="[[B]]")
    assert await _backlinks(call, a["id"]) == []
    assert await _backlinks(call, b["id"]) == [source["id"]]


async def test_links_never_cross_users(call, bob) -> None:
    await call("create_note", title="Bob's source", body="[[Shared title]]", as_=bob)
    alices = await call("create_note", title="Shared title")
    assert await _backlinks(call, alices["id"]) == []


async def test_backlinks_page(call) -> None:
    target = await call("create_note", title="Hub")
    made = [(await call("create_note", title=f"Spoke {i}", body="[[Hub]]"))["id"] for i in range(5)]
    first = await call("get_backlinks", note_id=target["id"], limit=2)
    seen = [b["id"] for b in first["items"]]
    cursor = first["next_cursor"]
    while cursor:
        page = await call("get_backlinks", note_id=target["id"], limit=2, cursor=cursor)
        seen += [b["id"] for b in page["items"]]
        cursor = page["next_cursor"]
    assert seen == sorted(made, reverse=True)


async def test_a_new_note_linking_its_own_title_links_to_itself(call) -> None:
    note = await call("create_note", title="Self Reference", body="I am [[self reference]].")
    assert await _backlinks(call, note["id"]) == [note["id"]]


async def test_a_link_to_a_title_several_notes_share_points_at_the_oldest(call) -> None:
    first = await call("create_note", title="Water plants", due_date="2026-12-01",
                       recurrence_rule="FREQ=WEEKLY")
    following = (await call("complete_task", note_id=first["id"]))["next_occurrence"]
    assert following["title"] == first["title"] and following["id"] > first["id"]
    created = await call("create_note", title="Garden log", body="[[Water plants]]")
    edited = await call("create_note", title="Chores", body="nothing yet")
    await call("edit_note", note_id=edited["id"], operation="append", text="[[water plants]]")
    imported = (await call("import_notes", notes=[{"title": "Imported", "body": "[[Water Plants]]"}]))["ids"][0]
    assert await _backlinks(call, first["id"]) == [imported, edited["id"], created["id"]]
    assert await _backlinks(call, following["id"]) == []


async def test_creating_notes_announces_each_new_note(call, fable, alice) -> None:
    from fable_core.infra.events import NoteChanged

    heard: list[object] = []
    unsubscribe = fable.events.subscribe(heard.append)
    try:
        note = await call("create_note", title="Announced", body="[[Elsewhere]]")
        assert heard == [NoteChanged(alice.user_id, note["id"], "created")]
        task = await call("create_note", title="Recurring", due_date="2026-12-01",
                          recurrence_rule="FREQ=DAILY")
        heard.clear()
        following = (await call("complete_task", note_id=task["id"]))["next_occurrence"]
    finally:
        unsubscribe()
    assert heard == [NoteChanged(alice.user_id, following["id"], "created"),
                     NoteChanged(alice.user_id, task["id"], "updated")]


_ALIASED = "---\naliases: [Kitchen, \"The cooking room\"]\nstatus: draft\n---\n\nTiles and taps."


async def test_a_link_to_an_alias_finds_the_note_however_it_was_written(call) -> None:
    waiting = await call("create_note", title="Plans", body="redo [[the cooking room]]")
    kitchen = await call("create_note", title="Kitchen renovation", body=_ALIASED)
    later = await call("create_note", title="Budget", body="[[Kitchen|that room]] costs")
    batch = (await call("import_notes", notes=[{"title": "Imported", "body": "[[kitchen]]"}]))["ids"][0]
    edited = await call("create_note", title="Chores", body="nothing yet")
    await call("edit_note", note_id=edited["id"], operation="append", text="clean [[The Cooking Room]]")
    assert sorted(await _backlinks(call, kitchen["id"])) == sorted(
        [waiting["id"], later["id"], batch, edited["id"]])
    assert "[[Kitchen|that room]]" in (await call("read_note", note_id=later["id"]))["body"]


async def test_a_title_wins_over_an_alias_and_renaming_leaves_alias_links_alone(call) -> None:
    aliased = await call("create_note", title="Kitchen renovation", body=_ALIASED)
    titled = await call("create_note", title="Kitchen")
    source = await call("create_note", title="Links", body="[[Kitchen]] and [[the cooking room]]")
    assert await _backlinks(call, titled["id"]) == [source["id"]]
    assert await _backlinks(call, aliased["id"]) == [source["id"]]
    await call("update_note", note_id=aliased["id"], title="Kitchen 2027")
    assert (await call("read_note", note_id=source["id"]))["body"] == "[[Kitchen]] and [[the cooking room]]"
    assert await _backlinks(call, aliased["id"]) == [source["id"]]
    assert (await call("read_note", note_id=source["id"]))["version"] == 1  # nothing of it was rewritten


async def test_changing_a_note_s_aliases_moves_the_links_that_used_them(call) -> None:
    note = await call("create_note", title="Kitchen renovation", body=_ALIASED)
    source = await call("create_note", title="Links", body="[[Kitchen]] then [[Galley]]")
    assert await _backlinks(call, note["id"]) == [source["id"]]
    await call("update_note", note_id=note["id"], body="---\naliases: Galley\n---\nTiles.")
    assert await _backlinks(call, note["id"]) == [source["id"]]  # by Galley now
    other = await call("create_note", title="Scullery", body="---\naliases: [Kitchen]\n---\n")
    assert await _backlinks(call, other["id"]) == [source["id"]]  # Kitchen waited, then found it
    await call("update_note", note_id=note["id"], body="No front matter now.")
    assert await _backlinks(call, note["id"]) == []
    await call("update_note", note_id=other["id"], body="plain")
    assert await _backlinks(call, other["id"]) == []
    back = await call("create_note", title="Galley")
    assert await _backlinks(call, back["id"]) == [source["id"]]


def test_aliases_are_read_from_the_head_of_a_body_only() -> None:
    """The model reads aliases on every save: a body is never split whole for it, so a block
    closing past the first 64 KB names none (and a 1 MB body costs what its head does)."""
    from fable_core.db.models import alias_keys

    assert alias_keys("---\naliases: [Kitchen]\n---\n" + "text\n" * 200_000) == ["kitchen"]
    assert alias_keys("---\naliases: [Kitchen]\n" + "note: x\n" * 10_000 + "---\n") is None
    assert alias_keys("no front matter [[Kitchen]]") is None
