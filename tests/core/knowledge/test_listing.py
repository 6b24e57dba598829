"""list_notes filters, sorts and cursor pagination; search_notes ranking and snippets."""

from __future__ import annotations

import pytest

from fable_core.errors import InvalidInput, NotFound
from fable_core.knowledge.listing import TOTAL_CAP


async def _walk(call, page_size: int, **args) -> list[dict]:
    items, cursor = [], None
    while True:
        page = await call("list_notes", limit=page_size, cursor=cursor, **args)
        assert len(page["items"]) <= page_size
        items += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return items


@pytest.fixture
async def corpus(call) -> dict[str, dict]:
    made = {}
    specs = [
        ("banana bread", {"due_date": "2026-12-03", "tags": ["food/baking"]}),
        ("Apple pie", {"due_date": "2026-12-01", "tags": ["food"]}),
        ("cherry jam", {"due_date": "2026-12-03"}),
        ("Date squares", {}),
        ("Elderflower cordial", {"due_date": "2026-12-02", "tags": ["drinks"]}),
        ("fig roll", {}),
        ("Grape juice", {"due_date": "2026-12-01", "tags": ["drinks", "food/fruit"]}),
    ]
    for title, extra in specs:
        made[title] = await call("create_note", title=title, **extra)
    await call("update_note", note_id=made["cherry jam"]["id"], body="touched last")
    return made


async def test_the_first_page_says_how_many_match_and_later_pages_do_not(call, corpus) -> None:
    first = await call("list_notes", limit=2, tag="food")
    second = await call("list_notes", limit=2, tag="food", cursor=first["next_cursor"])
    assert (first["total"], len(first["items"])) == (3, 2)
    assert second["total"] is None and len(second["items"]) == 1 and second["next_cursor"] is None
    assert (await call("list_notes"))["total"] == len(corpus)
    assert (await call("list_notes", text="jam"))["total"] == 1


async def test_a_large_total_is_counted_up_to_the_cap(call) -> None:
    for start in (0, 500):
        batch = [{"title": f"Entry number {i:04d}"} for i in range(start, start + 500)]
        await call("import_notes", notes=batch)
    await call("create_note", title="One more entry")
    page = await call("list_notes")
    assert page["total"] == TOTAL_CAP and len(page["items"]) == 20 and page["next_cursor"]


@pytest.mark.parametrize("sort", ["updated", "created", "title", "due"])
@pytest.mark.parametrize("page_size", [1, 2, 3])
async def test_every_sort_pages_without_gaps_or_repeats(call, corpus, sort, page_size) -> None:
    everything = (await call("list_notes", sort=sort, limit=200))["items"]
    walked = await _walk(call, page_size, sort=sort)
    assert [n["id"] for n in walked] == [n["id"] for n in everything]
    assert len({n["id"] for n in walked}) == len(corpus)


async def test_sort_orders(call, corpus) -> None:
    def titles(page: dict) -> list[str]:
        return [n["title"] for n in page["items"]]

    by_title = await call("list_notes", sort="title")
    assert titles(by_title) == sorted(corpus, key=str.lower)
    by_due = await call("list_notes", sort="due")
    assert titles(by_due)[:5] == ["Apple pie", "Grape juice", "Elderflower cordial", "banana bread", "cherry jam"]
    assert set(titles(by_due)[5:]) == {"Date squares", "fig roll"}  # undated last
    by_created = await call("list_notes", sort="created")
    assert titles(by_created) == list(reversed(corpus))
    by_updated = await call("list_notes", sort="updated")
    assert titles(by_updated)[0] == "cherry jam"


async def test_filters(call, corpus) -> None:
    project = await call("create_project", title="Kitchen")
    milestone = await call("create_milestone", project_id=project["id"], title="Autumn")
    in_project = await call("update_note", note_id=corpus["fig roll"]["id"], milestone_id=milestone["id"],
                            status="in_progress", priority="high")
    child = await call("create_note", title="Fig roll dough", parent_id=in_project["id"])

    async def ids(**args) -> set[int]:
        return {n["id"] for n in (await call("list_notes", limit=200, **args))["items"]}

    def of(*titles: str) -> set[int]:
        return {corpus[t]["id"] for t in titles}

    assert await ids(tag="food") == of("banana bread", "Apple pie", "Grape juice")
    assert await ids(tag="food/fruit") == of("Grape juice")
    assert await ids(tag="drinks") == of("Elderflower cordial", "Grape juice")
    assert await ids(kind="note") == of("Date squares") | {child["id"]}
    assert await ids(kind="task") == of("banana bread", "Apple pie", "cherry jam", "Elderflower cordial",
                                        "fig roll", "Grape juice")
    assert await ids(status=["in_progress"]) == of("fig roll")
    assert await ids(priority=["high", "low"]) == of("fig roll")
    assert await ids(project_id=project["id"]) == await ids(project="kitch") == of("fig roll")
    assert await ids(milestone_id=milestone["id"]) == of("fig roll")
    assert await ids(parent_id=in_project["id"]) == {child["id"]}
    assert await ids(due_before="2026-12-02") == of("Apple pie", "Grape juice")
    assert await ids(due_after="2026-12-02") == of("banana bread", "cherry jam")
    assert await ids(due_after="2026-12-01", due_before="2026-12-03") == of("Elderflower cordial")
    assert await ids(text="touched") == of("cherry jam")
    assert await ids(text="pie", kind="note") == set()


async def test_tag_prefix_is_hierarchical_not_textual(call) -> None:
    work = await call("create_note", title="A", tags=["work"])
    acme = await call("create_note", title="B", tags=["work/acme/infra"])
    await call("create_note", title="C", tags=["workshop"])
    await call("create_note", title="D", tags=["work_x"])
    page = await call("list_notes", tag="work")
    assert {n["id"] for n in page["items"]} == {work["id"], acme["id"]}


@pytest.mark.parametrize(
    "args",
    [
        {"cursor": "not a cursor"},
        {"cursor": "eyJrIjoidGFncyIsInAiOlswXX0"},  # a list_tags cursor
        {"sort": "random"},
        {"kind": "event"},
        {"status": ["open"]},
        {"due_before": "2026-31-12"},
        {"limit": 0},
        {"limit": 201},
        {"tag": "has space"},
        {"order": "asc"},
    ],
)
async def test_list_notes_refuses_bad_arguments(call, fails, args) -> None:
    await fails(call("list_notes", **args), InvalidInput)


async def test_the_longest_titles_page_by_title(call) -> None:
    """The title's key is in the cursor: 300 characters outside ASCII must still make a cursor
    the next call accepts."""
    for title in ["日本語のメモ" * 49 + f"日本語のメモ{n}"[:5] + str(n) for n in range(3)]:
        await call("create_note", title=title)
    in_one_page = [n["title"] for n in (await call("list_notes", sort="title", limit=10))["items"]]
    assert [n["title"] for n in await _walk(call, 1, sort="title")] == in_one_page
    assert len(in_one_page) == 3


async def test_a_cursor_from_another_sort_is_refused(call, corpus, fails) -> None:
    page = await call("list_notes", sort="title", limit=2)
    await fails(call("list_notes", sort="due", limit=2, cursor=page["next_cursor"]), InvalidInput)


async def test_filters_naming_invisible_rows_are_not_found(call, fails) -> None:
    for args in ({"project_id": 999}, {"milestone_id": 999}, {"parent_id": 999}, {"project": "nope"}):
        await fails(call("list_notes", **args), NotFound)


# --- search ------------------------------------------------------------------------------------


async def test_search_ranks_title_matches_first_and_highlights(call) -> None:
    in_body = await call("create_note", title="Weekly log",
                         body="Long text before. We discussed the kubernetes migration at length. More text after.")
    in_title = await call("create_note", title="Kubernetes migration plan", body="Steps and owners.")
    await call("create_note", title="Unrelated", body="Nothing to see")

    result = await call("search_notes", query="kubernetes migration")

    assert result["mode"] == "keyword" and result["query"] == "kubernetes migration"
    assert [h["id"] for h in result["items"]] == [in_title["id"], in_body["id"]]
    assert result["items"][0]["score"] >= result["items"][1]["score"] > 0
    assert "**kubernetes**" in result["items"][1]["snippet"].lower()
    assert "body" not in result["items"][0]


async def test_search_operators_and_stemming(call) -> None:
    a = await call("create_note", title="Cats", body="The cats were sleeping")
    b = await call("create_note", title="Dogs", body="The dog sleeps")
    await call("create_note", title="Birds", body="birds sing")

    async def ids(query: str) -> set[int]:
        return {h["id"] for h in (await call("search_notes", query=query))["items"]}

    assert await ids("sleep") == {a["id"], b["id"]}
    assert await ids("sleep -dog") == {a["id"]}
    assert await ids("cats or birds") == {a["id"]} | (await ids("birds"))
    assert await ids('"the dog sleeps"') == {b["id"]}


async def test_search_pages(call) -> None:
    made = {(await call("create_note", title=f"Recipe {i}", body="soup " * (i + 1)))["id"] for i in range(5)}
    first = await call("search_notes", query="soup", limit=2)
    seen = [h["id"] for h in first["items"]]
    cursor = first["next_cursor"]
    while cursor:
        page = await call("search_notes", query="soup", limit=2, cursor=cursor)
        seen += [h["id"] for h in page["items"]]
        cursor = page["next_cursor"]
    assert sorted(seen) == sorted(made) and len(seen) == 5


async def test_search_falls_back_to_near_miss_titles(call) -> None:
    note = await call("create_note", title="Photosynthesis overview")
    result = await call("search_notes", query="photosyntesis overveiw")
    assert [h["id"] for h in result["items"]] == [note["id"]]


async def test_search_filters(call) -> None:
    project = await call("create_project", title="Lab")
    task = await call("create_note", title="Order reagents", project_id=project["id"], status="todo",
                      tags=["lab/supplies"])
    await call("create_note", title="Reagents history", tags=["reading"])
    assert [h["id"] for h in (await call("search_notes", query="reagents", kind="task"))["items"]] == [task["id"]]
    assert [h["id"] for h in (await call("search_notes", query="reagents", tag="lab"))["items"]] == [task["id"]]
    by_project = await call("search_notes", query="reagents", project_id=project["id"])
    assert [h["id"] for h in by_project["items"]] == [task["id"]]


@pytest.mark.parametrize("args", [{"query": ""}, {"query": "   "}, {"query": "x" * 501},
                                  {"query": "ok", "limit": 51}, {"query": "ok", "cursor": "zz"},
                                  {"query": "ok", "mode": "semantic"}])
async def test_search_refuses_bad_arguments(call, fails, args) -> None:
    await fails(call("search_notes", **args), InvalidInput)


async def test_the_same_listing_for_two_users_shows_each_only_their_own(call, bob) -> None:
    """list_notes reuses one statement per shape of filters: every value, the owner first, is
    bound anew on each call."""
    mine = await call("create_note", title="Mine", tags=["shared/tag"], status="todo", priority="high")
    theirs = await call("create_note", title="Theirs", tags=["shared/tag"], status="todo", priority="high",
                        as_=bob)
    for args in ({}, {"tag": "shared", "kind": "task", "status": ["todo"], "priority": ["high"]},
                 {"sort": "title", "limit": 1}):
        assert [n["id"] for n in (await call("list_notes", **args))["items"]] == [mine["id"]]
        assert [n["id"] for n in (await call("list_notes", as_=bob, **args))["items"]] == [theirs["id"]]
    other = await call("create_note", title="Other", tags=["else"])
    assert [n["id"] for n in (await call("list_notes", tag="else"))["items"]] == [other["id"]]
    assert [n["id"] for n in (await call("list_notes", tag="shared"))["items"]] == [mine["id"]]
