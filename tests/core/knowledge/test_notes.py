from __future__ import annotations

import pytest

from fable_core.errors import Conflict, InvalidInput, NeedsConfirmation, NotFound


async def test_create_note_and_task(call) -> None:
    note = await call("create_note", title="Meeting notes", body="# Agenda", tags=["#Work/Acme", "work/acme"])
    assert note["kind"] == "note" and note["status"] is None and note["tags"] == ["work/acme"]
    assert note["version"] == 1 and "body" not in note
    task = await call("create_note", title="Send invoice", due_date="2026-12-24")
    assert task["kind"] == "task" and task["status"] == "todo" and task["due_date"] == "2026-12-24"
    by_priority = await call("create_note", title="Call bank", priority="high")
    assert by_priority["status"] == "todo"


async def test_create_note_with_parent_project_and_milestone(call, fails) -> None:
    project = await call("create_project", title="Home")
    milestone = await call("create_milestone", project_id=project["id"], title="Spring")
    parent = await call("create_note", title="Clean house", status="todo")
    child = await call("create_note", title="Clean windows", parent_id=parent["id"],
                       milestone_id=milestone["id"], status="todo")
    assert child["parent_id"] == parent["id"]
    assert child["milestone_id"] == milestone["id"] and child["project_id"] == project["id"]
    other = await call("create_project", title="Work")
    await fails(call("create_note", title="Mismatch", project_id=other["id"],
                     milestone_id=milestone["id"]), InvalidInput)
    assert (await call("list_notes", parent_id=parent["id"]))["items"][0]["id"] == child["id"]


# --- duplicates -------------------------------------------------------------------------------


@pytest.mark.parametrize("title", ["Quarterly Planning", "quarterly planning", "Quarterly planning!",
                                   "  QUARTERLY -- PLANNING "])
async def test_duplicate_titles_are_refused(call, fails, snapshot, title) -> None:
    existing = await call("create_note", title="Quarterly Planning")
    before = await snapshot()
    err = await fails(call("create_note", title=title), Conflict)
    assert err.details["existing_note_id"] == existing["id"]
    assert "update_note" in err.message and "Quarterly Planning" in err.message
    assert await fails(call("create_note", title=title, confirm=True), Conflict)  # the same title: no confirming
    assert await snapshot() == before


@pytest.mark.parametrize("title", ["Quarterly Planing", "Quartely Planning"])
async def test_very_similar_titles_ask_for_confirmation(call, fails, snapshot, title) -> None:
    existing = await call("create_note", title="Quarterly Planning")
    before = await snapshot()
    err = await fails(call("create_note", title=title), NeedsConfirmation)
    assert err.details["match"] == {"id": existing["id"], "title": "Quarterly Planning"}
    assert "confirm=true" in err.message and await snapshot() == before
    assert (await call("create_note", title=title, confirm=True))["title"] == title


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Standup 2026-12-01", "Standup 2026-12-02"),  # a dated series
        ("Weekly review 48", "Weekly review 49"),
        ("Quarterly Planning", "Quarterly Reporting"),  # different enough
        ("Ideas", "Ideas for the garden"),
    ],
)
async def test_distinct_titles_are_not_duplicates(call, first, second) -> None:
    await call("create_note", title=first)
    await call("create_note", title=second)


async def test_duplicates_are_per_user(call, bob) -> None:
    await call("create_note", title="Reading list")
    await call("create_note", title="Reading list", as_=bob)


async def test_renaming_onto_an_existing_title_is_refused(call, fails, snapshot) -> None:
    await call("create_note", title="Alpha")
    beta = await call("create_note", title="Beta")
    before = await snapshot()
    await fails(call("update_note", note_id=beta["id"], title="ALPHA"), Conflict)
    assert await snapshot() == before
    same = await call("update_note", note_id=beta["id"], title="beta")  # its own title, recased
    assert same["title"] == "beta"


# --- reading ----------------------------------------------------------------------------------

_LONG = (
    "Intro line\n"
    "## Decisions\n"
    "We chose PostgreSQL.\n"
    "### Details\n"
    "Because of pgvector.\n"
    "## Open questions\n"
    "```\n## not a heading\n```\n"
    "Who hosts it?\n"
)


async def test_read_note_whole_and_outline(call) -> None:
    note = await call("create_note", title="Design", body=_LONG)
    read = await call("read_note", note_id=note["id"])
    assert read["body"] == _LONG and read["body_length"] == len(_LONG)
    assert read["next_offset"] is None and read["offset"] == 0
    assert read["sections"] == ["Decisions", "Details", "Open questions"]
    assert read["created_at"] and read["version"] == 1


async def test_read_note_section(call, fails) -> None:
    note = await call("create_note", title="Design", body=_LONG)
    decisions = await call("read_note", note_id=note["id"], section="## decisions")
    assert decisions["body"] == "We chose PostgreSQL.\n### Details\nBecause of pgvector.\n"
    assert decisions["section"] == "## decisions"
    questions = await call("read_note", note_id=note["id"], section="Open questions")
    assert questions["body"] == "```\n## not a heading\n```\nWho hosts it?\n"
    err = await fails(call("read_note", note_id=note["id"], section="Budget"), NotFound)
    assert err.details["sections"] == ["Decisions", "Details", "Open questions"]


async def test_read_note_in_parts_with_budget_and_offset(call) -> None:
    body = "".join(f"line {i:04d}\n" for i in range(100))  # 1000 characters
    note = await call("create_note", title="Long", body=body)
    parts, offset = [], 0
    while offset is not None:
        part = await call("read_note", note_id=note["id"], max_chars=300, offset=offset)
        assert len(part["body"]) <= 300 and part["offset"] == offset
        parts.append(part["body"])
        offset = part["next_offset"]
    assert "".join(parts) == body and len(parts) == 4
    past = await call("read_note", note_id=note["id"], offset=5000)
    assert past["body"] == "" and past["next_offset"] is None


async def test_read_note_budget_within_a_section(call) -> None:
    note = await call("create_note", title="Design", body=_LONG)
    part = await call("read_note", note_id=note["id"], section="Decisions", max_chars=100, offset=5)
    assert part["body"] == "We chose PostgreSQL.\n### Details\nBecause of pgvector.\n"[5:]
    assert part["next_offset"] is None


# --- updating ---------------------------------------------------------------------------------


async def test_update_note_changes_only_given_fields(call) -> None:
    note = await call("create_note", title="Plan", body="Body", tags=["a", "b"], due_date="2026-12-01")
    updated = await call("update_note", note_id=note["id"], add_tags=["c", "A"], remove_tags=["b"],
                         priority="high")
    assert updated["tags"] == ["a", "c"] and updated["priority"] == "high"
    assert updated["title"] == "Plan" and updated["due_date"] == "2026-12-01"
    assert updated["version"] == 2
    assert (await call("read_note", note_id=note["id"]))["body"] == "Body"
    replaced = await call("update_note", note_id=note["id"], tags=["z"], clear=["priority", "due_date"])
    assert replaced["tags"] == ["z"] and replaced["priority"] is None and replaced["due_date"] is None


async def test_update_note_makes_a_note_a_task_when_given_task_fields(call) -> None:
    note = await call("create_note", title="Idea")
    task = await call("update_note", note_id=note["id"], due_date="2026-12-10")
    assert task["status"] == "todo"


async def test_update_note_moves_between_projects_and_milestones(call, fails, snapshot) -> None:
    home = await call("create_project", title="Home")
    work = await call("create_project", title="Work")
    spring = await call("create_milestone", project_id=home["id"], title="Spring")
    q1 = await call("create_milestone", project_id=work["id"], title="Q1")
    note = await call("create_note", title="Task", status="todo", milestone_id=spring["id"])

    same = await call("update_note", note_id=note["id"], project="home")
    assert same["project_id"] == home["id"] and same["milestone_id"] == spring["id"]  # kept

    moved = await call("update_note", note_id=note["id"], project_id=work["id"])
    assert moved["project_id"] == work["id"] and moved["milestone_id"] is None  # left with the project

    both = await call("update_note", note_id=note["id"], milestone_id=q1["id"])
    assert both["project_id"] == work["id"] and both["milestone_id"] == q1["id"]

    before = await snapshot()
    await fails(call("update_note", note_id=note["id"], milestone_id=spring["id"]), InvalidInput)
    await fails(call("update_note", note_id=note["id"], project_id=work["id"], project="home"), InvalidInput)
    assert await snapshot() == before

    back = await call("update_note", note_id=note["id"], project_id=home["id"], milestone_id=spring["id"])
    assert back["project_id"] == home["id"] and back["milestone_id"] == spring["id"]

    cleared = await call("update_note", note_id=note["id"], clear=["project"])
    assert cleared["project_id"] is None and cleared["milestone_id"] is None

    by_milestone = await call("update_note", note_id=note["id"], milestone_id=q1["id"])
    assert by_milestone["project_id"] == work["id"]  # the milestone brings its project
    only_milestone = await call("update_note", note_id=note["id"], clear=["milestone"])
    assert only_milestone["project_id"] == work["id"] and only_milestone["milestone_id"] is None


async def test_update_note_refuses_parent_cycles(call, fails, snapshot) -> None:
    a = await call("create_note", title="A")
    b = await call("create_note", title="B", parent_id=a["id"])
    c = await call("create_note", title="C", parent_id=b["id"])
    before = await snapshot()
    await fails(call("update_note", note_id=a["id"], parent_id=c["id"]), InvalidInput)
    await fails(call("update_note", note_id=a["id"], parent_id=a["id"]), InvalidInput)
    assert await snapshot() == before


async def test_update_note_expected_version(call, fails) -> None:
    note = await call("create_note", title="Shared")
    await call("update_note", note_id=note["id"], body="one", expected_version=1)
    err = await fails(call("update_note", note_id=note["id"], body="two", expected_version=1), Conflict)
    assert err.details["version"] == 2


async def test_recurring_task_needs_a_due_date(call, fails, snapshot) -> None:
    task = await call("create_note", title="Every week", due_date="2026-12-01", recurrence_rule="FREQ=WEEKLY")
    before = await snapshot()
    await fails(call("update_note", note_id=task["id"], clear=["due_date"]), InvalidInput)
    await fails(call("create_note", title="No date", status="todo", recurrence_rule="FREQ=DAILY"), InvalidInput)
    assert await snapshot() == before


# --- edit_note --------------------------------------------------------------------------------

_DOC = "# Plan\nIntro\n\n## Tasks\n- one\n\n## Notes\nSome notes\n"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"operation": "append", "text": "Tail"}, _DOC + "Tail"),
        ({"operation": "prepend", "text": "Head"}, "Head\n" + _DOC),
        ({"operation": "replace", "find": "Intro", "text": "Overview"}, _DOC.replace("Intro", "Overview")),
        ({"operation": "replace", "find": "one", "text": "two", "replace_all": True}, _DOC.replace("one", "two")),
        ({"operation": "replace_section", "section": "Tasks", "text": "- new\n- list"},
         "# Plan\nIntro\n\n## Tasks\n- new\n- list\n\n## Notes\nSome notes\n"),
        ({"operation": "append_to_section", "section": "tasks", "text": "- two"},
         "# Plan\nIntro\n\n## Tasks\n- one\n- two\n\n## Notes\nSome notes\n"),
        ({"operation": "append_to_section", "section": "Notes", "text": "More"},
         "# Plan\nIntro\n\n## Tasks\n- one\n\n## Notes\nSome notes\nMore\n"),
        ({"operation": "replace_section", "section": "Notes", "text": ""},
         "# Plan\nIntro\n\n## Tasks\n- one\n\n## Notes\n\n"),
    ],
)
async def test_edit_note_operations(call, args, expected) -> None:
    note = await call("create_note", title="Plan", body=_DOC)
    edited = await call("edit_note", note_id=note["id"], **args)
    assert edited["version"] == 2
    assert (await call("read_note", note_id=note["id"]))["body"] == expected


@pytest.mark.parametrize(
    ("body", "section", "expected"),
    [
        ("## A\n## B\n", "A", "## A\nX\n## B\n"),  # empty section
        ("## A", "A", "## A\nX"),  # heading without a newline at the end
        ("## A\ntext", "A", "## A\ntext\nX"),
        ("## A\n### Sub\nsub text\n\n## B\n", "A", "## A\n### Sub\nsub text\nX\n\n## B\n"),
    ],
)
async def test_append_to_section_edges(call, body, section, expected) -> None:
    note = await call("create_note", title="Edges", body=body)
    await call("edit_note", note_id=note["id"], operation="append_to_section", section=section, text="X")
    assert (await call("read_note", note_id=note["id"]))["body"] == expected


async def test_edit_note_refusals_write_nothing(call, fails, snapshot) -> None:
    note = await call("create_note", title="Plan", body=_DOC)
    before = await snapshot()
    refusals = [
        {"operation": "replace", "text": "x"},  # no find
        {"operation": "replace", "find": "absent", "text": "x"},
        {"operation": "replace", "find": "\n", "text": "x"},  # several, no replace_all
        {"operation": "replace_section", "text": "x"},  # no section
        {"operation": "append_to_section", "section": "Budget", "text": "x"},
        {"operation": "rewrite", "text": "x"},
        {"operation": "append"},
        {"operation": "append", "text": "x" * 1_000_001},
    ]
    for args in refusals:
        await fails(call("edit_note", note_id=note["id"], **args), InvalidInput)
    await fails(call("edit_note", note_id=note["id"], operation="append", text="x", expected_version=9), Conflict)
    assert await snapshot() == before


# --- convert, delete, tags --------------------------------------------------------------------


async def test_convert_note_both_ways(call) -> None:
    note = await call("create_note", title="Thing", body="text")
    task = await call("convert_note", note_id=note["id"], to="task")
    assert task["kind"] == "task" and task["status"] == "todo"
    await call("update_note", note_id=note["id"], priority="high", due_date="2026-12-01",
               recurrence_rule="FREQ=WEEKLY")
    back = await call("convert_note", note_id=note["id"], to="note")
    assert back["kind"] == "note"
    assert (back["status"], back["priority"], back["due_date"], back["recurrence_rule"]) == (None,) * 4
    assert (await call("read_note", note_id=note["id"]))["body"] == "text"
    same = await call("convert_note", note_id=note["id"], to="note")
    assert same["version"] == back["version"]


async def test_delete_note_keeps_children_and_unresolves_links(call, fails) -> None:
    parent = await call("create_note", title="Parent")
    child = await call("create_note", title="Child", parent_id=parent["id"])
    linker = await call("create_note", title="Linker", body="see [[Parent]]")
    assert (await call("delete_note", note_id=parent["id"])) == {"id": parent["id"], "deleted": True}
    await fails(call("read_note", note_id=parent["id"]), NotFound)
    assert (await call("read_note", note_id=child["id"]))["parent_id"] is None
    again = await call("create_note", title="parent")
    assert [b["id"] for b in (await call("get_backlinks", note_id=again["id"]))["items"]] == [linker["id"]]
    await fails(call("delete_note", note_id=parent["id"]), NotFound)


async def test_list_tags_counts_and_prefix(call, bob) -> None:
    await call("create_note", title="One", tags=["work/acme", "urgent"])
    await call("create_note", title="Two", tags=["work/acme"])
    await call("create_note", title="Three", tags=["work/zeta", "home"])
    await call("create_note", title="Bob's", tags=["work/acme", "secret"], as_=bob)
    tags = await call("list_tags")
    assert tags["items"][0] == {"tag": "work/acme", "count": 2}
    assert {t["tag"] for t in tags["items"]} == {"work/acme", "urgent", "work/zeta", "home"}
    work = await call("list_tags", prefix="work/")
    assert [t["tag"] for t in work["items"]] == ["work/acme", "work/zeta"]
    page = await call("list_tags", limit=3)
    rest = await call("list_tags", limit=3, cursor=page["next_cursor"])
    assert len(page["items"]) + len(rest["items"]) == 4 and rest["next_cursor"] is None


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"title": ""}, InvalidInput),
        ({"title": "   "}, InvalidInput),
        ({"title": "x" * 301}, InvalidInput),
        ({"title": "ok", "body": "x" * 1_000_001}, InvalidInput),
        ({"title": "ok", "due_date": "2026-02-30"}, InvalidInput),
        ({"title": "ok", "due_date": "next friday"}, InvalidInput),
        ({"title": "ok", "status": "doing"}, InvalidInput),
        ({"title": "ok", "priority": "urgent"}, InvalidInput),
        ({"title": "ok", "due_date": "2026-12-01", "recurrence_rule": "every tuesday at 9am"}, InvalidInput),
        ({"title": "ok", "due_date": "2026-12-01", "recurrence_rule": "FREQ=WEEKLY;BYDAY=XX"}, InvalidInput),
        ({"title": "ok", "due_date": "2026-12-01", "recurrence_rule": "FREQ=HOURLY"}, InvalidInput),
        ({"title": "ok", "tags": ["bad tag"]}, InvalidInput),
        ({"title": "ok", "tags": [f"t{i}" for i in range(51)]}, InvalidInput),
        ({"title": "ok", "parent_id": 0}, InvalidInput),
        ({"title": "ok", "parent_id": 99999}, NotFound),
        ({"title": "ok", "project_id": 99999}, NotFound),
        ({"title": "ok", "milestone_id": 99999}, NotFound),
        ({"title": "ok", "colour": "red"}, InvalidInput),
        ({"body": "no title"}, InvalidInput),
        ({"title": 42}, InvalidInput),
    ],
)
async def test_create_note_bad_input_writes_nothing(call, fails, snapshot, args, error) -> None:
    await call("create_note", title="Existing")
    before = await snapshot()
    err = await fails(call("create_note", **args), error)
    if error is InvalidInput:
        assert err.details["errors"] or err.details.get("field")
    assert await snapshot() == before


@pytest.mark.parametrize(
    "args",
    [
        {"title": ""}, {"title": "x" * 301}, {"body": "x" * 1_000_001}, {"due_date": "2026-13-01"},
        {"status": "finished"}, {"priority": "p1"}, {"recurrence_rule": "FREQ=NEVER"},
        {"clear": ["title"]}, {"expected_version": 0}, {"remove_tags": ["no spaces allowed"]},
        {"note": "unknown argument"},
    ],
)
async def test_update_note_bad_input_writes_nothing(call, fails, snapshot, args) -> None:
    note = await call("create_note", title="Existing", due_date="2026-12-01")
    before = await snapshot()
    await fails(call("update_note", note_id=note["id"], **args), InvalidInput)
    assert await snapshot() == before


async def test_oversized_body_says_what_the_limit_is(call, fails) -> None:
    err = await fails(call("create_note", title="Big", body="x" * 1_000_001), InvalidInput)
    assert "body" in err.message and "1000000" in err.message


async def test_a_body_of_a_million_distinct_words_is_stored_and_its_start_searched(call) -> None:
    """A tsvector holds at most 1 MB: such a body was refused (503 "string is too long for
    tsvector"). It is stored whole; search by words reads its first 150,000 characters."""
    words = " ".join(f"w{i:06x}q" for i in range(110_000))  # 1,099,999 characters, each word once
    body = ("zephyrine " + words)[:1_000_000]
    note = await call("create_note", title="Distinct words", body=body)
    assert (await call("read_note", note_id=note["id"]))["body_length"] == len(body)
    found = await call("search_notes", query="zephyrine")
    assert [hit["id"] for hit in found["items"]] == [note["id"]]


async def test_search_reads_a_tag_operator_as_the_tag_filter(call) -> None:
    """Issue 38, item 12: `tag:name` among the words filters by that tag."""
    kept = await call("create_note", title="Boiler service", body="annual boiler check", tags=["home"])
    await call("create_note", title="Boiler at work", body="office boiler check", tags=["work"])
    found = await call("search_notes", query="boiler TAG:Home check")
    assert [hit["id"] for hit in found["items"]] == [kept["id"]]
    assert [hit["id"] for hit in (await call("search_notes", query="boiler", tag="home"))["items"]] == [kept["id"]]
    for query, said in (("tag:home", "alone is no search"), ("boiler tag:home tag:work", "one tag"),
                        ("boiler tag:", "tag ''"), ("boiler tag:a//b", "must be 1-64")):
        with pytest.raises(InvalidInput, match=said):
            await call("search_notes", query=query)
    with pytest.raises(InvalidInput, match="one tag"):
        await call("search_notes", query="boiler tag:work", tag="home")
