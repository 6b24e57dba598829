"""The keyword ranking's two ways (``fable_core.knowledge.ranking``), with windows small enough
for a test vault: every match in full when few of the newest notes match, windows newest first
when many do, notes named by the query first whatever their age, and pages that neither repeat
nor skip."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, text

from fable_core.knowledge.filters import note_filters
from fable_core.knowledge.ranking import Bounds, keyword_ranking
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

SMALL = Bounds(window=10, common=3, titled=5)


async def _vault(call: Any, fable: Fable, notes: list[dict[str, Any]]) -> list[int]:
    """The notes, oldest first: the first was updated longest ago. Returns their ids in that order."""
    await call("import_notes", notes=notes)
    async with fable.db.engine.begin() as conn:
        ids = [i for (i,) in await conn.execute(text("SELECT id FROM notes ORDER BY id"))]
        await conn.execute(text("UPDATE notes SET updated_at = now() - make_interval(days => 1000 - (id - :first))"),
                           {"first": ids[0]})
    return ids


async def _rank(fable: Fable, caller: Caller, query: str, start: int = 0, count: int = 100, *,
                bounds: Bounds = SMALL, **filters: Any) -> list[int]:
    async with fable.db.reading() as session:
        where = note_filters(tag=filters.get("tag"), kind=filters.get("kind", "all"), status=None,
                             priority=None, project_id=None, milestone_id=None, parent_id=None,
                             due_before=None, due_after=None)
        ranked = await keyword_ranking(session, caller, func.websearch_to_tsquery("english", query), where,
                                       start, count, bounds)
    return [note_id for note_id, _ in ranked]


def _filler(n: int, body: str = "plain words here") -> list[dict[str, Any]]:
    return [{"title": f"Filler {i:03d} entry", "body": body} for i in range(n)]


async def test_a_vault_within_one_window_is_ranked_in_full(call, fable: Fable, alice: Caller) -> None:
    ids = await _vault(call, fable, [{"title": "Alpha", "body": "garden"},
                                     {"title": "Beta", "body": "garden garden"},
                                     {"title": "Garden plan", "body": "soil"}])
    assert await _rank(fable, alice, "garden", bounds=Bounds(window=10)) == [ids[2], ids[1], ids[0]]


async def test_few_matches_in_the_newest_notes_rank_every_match(call, fable: Fable, alice: Caller) -> None:
    """A word in no more than a few of the newest notes: the oldest match, which says it most, comes first."""
    notes = [{"title": "Old one", "body": "heron heron heron heron"}, *_filler(30),
             {"title": "New one", "body": "heron"}]
    ids = await _vault(call, fable, notes)
    assert await _rank(fable, alice, "heron") == [ids[0], ids[-1]]


async def test_a_word_rare_among_the_newest_notes_but_in_many_old_ones_is_ranked_by_windows(
        call, fable: Fable, alice: Caller) -> None:
    """Few of the newest notes have it, more than ``every`` notes in all do: ranking them all
    would grow with the vault, so windows rank them, newest first, and the old note that says
    it most waits for its window."""
    sightings = [{"title": f"Sighting {i:02d} log", "body": "heron"} for i in range(6)]
    later = [{"title": f"Later {i:02d} page", "body": "plain words"} for i in range(8)]
    ids = await _vault(call, fable, [{"title": "Old one", "body": "heron " * 9}, *_filler(20), *sightings, *later])
    every = await _rank(fable, alice, "heron", bounds=Bounds(window=10, common=3, titled=5, every=10))
    windows = await _rank(fable, alice, "heron", bounds=Bounds(window=10, common=3, titled=5, every=5))
    assert every[0] == ids[0]  # 7 matches, at most 10 ranked in full: the one saying it most first
    assert sorted(windows) == sorted(every) and windows[-1] == ids[0] and windows[0] != ids[0]


async def test_many_matches_are_ranked_newest_window_first(call, fable: Fable, alice: Caller) -> None:
    """A word in every note: the first window (the ten newest) is ranked, then the next twenty,
    then the rest; an old note that says it most waits for its window."""
    notes = [{"title": "Oldest", "body": "common " * 9}, *_filler(39, "common word")]
    ids = await _vault(call, fable, notes)
    ranked = await _rank(fable, alice, "common")
    assert sorted(ranked) == sorted(ids)  # every match, once
    assert set(ranked[:10]) == set(ids[-10:])
    assert set(ranked[10:30]) == set(ids[-30:-10])
    assert ranked[-10] == ids[0]  # first of the last window: the one that says it most


async def test_a_note_named_by_the_query_joins_the_first_window_whatever_its_age(
        call, fable: Fable, alice: Caller) -> None:
    notes = [{"title": "Common knowledge", "body": "about it"}, *_filler(39, "common word")]
    ids = await _vault(call, fable, notes)
    assert (await _rank(fable, alice, "common"))[0] == ids[0]
    assert ids[0] not in await _rank(fable, alice, "common word")  # it has one of the words only


@pytest.mark.parametrize("size", [1, 3, 7, 10])
async def test_pages_of_a_windowed_ranking_neither_repeat_nor_skip(call, fable: Fable, alice: Caller,
                                                                   size: int) -> None:
    ids = await _vault(call, fable, [{"title": "Common start", "body": "x"}, *_filler(44, "common word")])
    whole = await _rank(fable, alice, "common")
    pages = [await _rank(fable, alice, "common", start, size) for start in range(0, len(ids), size)]
    assert [note_id for page in pages for note_id in page] == whole
    assert len(whole) == len(ids)


async def test_a_phrase_of_common_words_is_found_beyond_the_first_windows(call, fable: Fable, alice: Caller) -> None:
    """Every note has both words; only the two oldest have them as the phrase."""
    notes = [{"title": "Old a", "body": "budget roadmap"}, {"title": "Old b", "body": "the budget roadmap"},
             *_filler(40, "roadmap then budget")]
    ids = await _vault(call, fable, notes)
    assert sorted(await _rank(fable, alice, '"budget roadmap"')) == sorted(ids[:2])
    assert len(await _rank(fable, alice, "budget roadmap")) == len(ids)


async def test_filters_apply_inside_the_windows(call, fable: Fable, alice: Caller) -> None:
    notes = [{"title": f"Tagged {i}", "body": "common", "tags": ["lab"]} for i in range(3)]
    ids = await _vault(call, fable, [*notes, *_filler(40, "common")])
    assert sorted(await _rank(fable, alice, "common", tag="lab")) == ids[:3]
    assert await _rank(fable, alice, "common", kind="task") == []


async def test_a_query_of_excluded_words_alone_finds_the_notes_without_them(
        call, fable: Fable, alice: Caller) -> None:
    ids = await _vault(call, fable, [{"title": "Has it", "body": "common"}, *_filler(25)])
    assert sorted(await _rank(fable, alice, "-common")) == ids[1:]
    assert sorted(await _rank(fable, alice, "-common", bounds=Bounds(window=100))) == ids[1:]


async def test_another_users_notes_never_enter_a_window(call, fable: Fable, alice: Caller, bob: Caller) -> None:
    mine = await _vault(call, fable, _filler(15, "common"))
    await call("import_notes", as_=bob, notes=[{"title": f"Bob {i}", "body": "common"} for i in range(30)])
    assert sorted(await _rank(fable, alice, "common")) == mine
    assert len(await _rank(fable, bob, "common")) == 30


async def test_search_finds_a_tags_words(call) -> None:
    tagged = await call("create_note", title="Async notes", body="event loops", tags=["topic/python"])
    await call("create_note", title="Snakes", body="no tag here")
    result = await call("search_notes", query="python")
    assert [h["id"] for h in result["items"]] == [tagged["id"]]
    assert [h["id"] for h in (await call("search_notes", query="topic python"))["items"]] == [tagged["id"]]
