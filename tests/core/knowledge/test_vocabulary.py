"""Typo-tolerant search: each user's vocabulary (the words of their notes, counted as notes are
created, changed and deleted) and search_notes correcting a misspelt word with it when it finds
few notes."""

from __future__ import annotations

import base64
import json

import pytest
from sqlalchemy import text

from fable_core.caller import Caller
from fable_core.errors import Conflict, InvalidInput
from fable_core.runtime import Fable

# the vocabulary as it should be: counted afresh from the notes (migration 0010's backfill)
_FROM_NOTES = text("""
    SELECT w.word, count(*) FROM notes n,
         unnest(tsvector_to_array(to_tsvector('fable_words', concat_ws(' ', n.title, n.body)))) AS w(word)
    WHERE n.user_id = :u AND length(w.word) BETWEEN 3 AND 32 GROUP BY w.word
""")


async def vocabulary(fable: Fable, caller: Caller) -> dict[str, int]:
    """Each word of the caller's vocabulary and how many of their notes have it."""
    async with fable.db.engine.connect() as conn:
        rows = await conn.execute(text("SELECT word, notes FROM note_words WHERE user_id = :u"), {"u": caller.user_id})
        return dict(rows.all())


async def counted_afresh(fable: Fable, caller: Caller) -> dict[str, int]:
    async with fable.db.engine.connect() as conn:
        return dict((await conn.execute(_FROM_NOTES, {"u": caller.user_id})).all())


async def titles(call, query: str, **args) -> tuple[list[str], str | None]:
    found = await call("search_notes", query=query, **args)
    return [h["title"] for h in found["items"]], found.get("corrected")


@pytest.fixture
async def kitchen(call) -> dict:
    await call("create_note", title="Garden plan", body="Tomatoes and basil along the fence.")
    return await call("create_note", title="Kitchen renovation", body="New cabinets; the soup recipes move to a shelf.")


async def test_a_misspelt_word_finds_the_notes_with_the_word_meant(call, kitchen) -> None:
    found = await call("search_notes", query="kitchn")
    assert [h["id"] for h in found["items"]] == [kitchen["id"]]
    assert found["corrected"] == "kitchen" and found["mode"] == "keyword" and found["query"] == "kitchn"
    recipes = await call("search_notes", query="recipies")
    assert [h["id"] for h in recipes["items"]] == [kitchen["id"]] and recipes["corrected"] == "recipes"
    assert "**recipes**" in recipes["items"][0]["snippet"]  # the words searched are the ones highlighted


async def test_only_the_misspelt_words_of_a_query_are_corrected(call, kitchen) -> None:
    assert await titles(call, "kitchen recipies") == (["Kitchen renovation"], "kitchen recipes")
    assert await titles(call, '"soup recipies" -garden') == (["Kitchen renovation"], '"soup recipes" -garden')
    assert await titles(call, "Kitchn, cabinets") == (["Kitchen renovation"], "kitchen, cabinets")
    # an excluded word is never corrected; a word nothing is like stays as typed and finds nothing
    assert await titles(call, "kitchen -gardn") == (["Kitchen renovation"], None)
    assert (await titles(call, "kitchn zzyzx"))[1] is None


async def test_a_query_that_finds_its_words_is_not_corrected(call, kitchen) -> None:
    for query in ("kitchen", "recipe", "Kitchen recipes", "soup OR tomatoes"):  # "recipe": the stem of "recipes"
        found = await call("search_notes", query=query)
        assert found["items"] and "corrected" not in found, query


async def test_a_word_of_a_known_stem_is_not_corrected_to_a_more_alike_word(call) -> None:
    await call("create_note", title="Dinner", body="I cook soup in the kitchen")
    await call("create_note", title="Jar", body="a cookie jar")
    # "cooking" is searched as "cook", which a note has: only "kitchn" is a misspelling
    assert await titles(call, "cooking kitchn") == (["Dinner"], "cooking kitchen")


async def test_the_correction_is_asked_only_when_a_page_is_not_full(call) -> None:
    for i in range(3):
        await call("create_note", title=f"Garden row {i}", body="tomatoes")
    await call("create_note", title="Shed", body="the kitchen of the garden shed")
    # "tomatoes OR kitchn" fills a page of 3 with tomatoes: no correction is looked for
    assert (await titles(call, "tomatoes OR kitchn", limit=3))[1] is None
    corrected = await titles(call, "tomatoes OR kitchn", limit=5)
    assert corrected[1] == "tomatoes OR kitchen" and len(corrected[0]) == 4


async def test_the_pages_after_a_corrected_one_search_the_correction(call) -> None:
    made = {(await call("create_note", title=f"Kitchen shelf {i}", body="pans"))["id"] for i in range(5)}
    seen, cursor = [], None
    while True:
        page = await call("search_notes", query="kitchn", limit=2, cursor=cursor)
        assert page["corrected"] == "kitchen"
        seen += [h["id"] for h in page["items"]]
        cursor = page.get("next_cursor")
        if cursor is None:
            break
    assert sorted(seen) == sorted(made) and len(seen) == 5


@pytest.mark.parametrize("position", [[2, 7], [-1], ["2"], [True, "kitchen"]])
async def test_a_forged_cursor_is_refused(call, fails, position) -> None:
    cursor = base64.urlsafe_b64encode(json.dumps({"k": "search", "p": position}).encode()).decode()
    await fails(call("search_notes", query="kitchn", cursor=cursor), InvalidInput)


async def test_a_word_prefers_the_more_common_of_equally_alike_words(call) -> None:
    await call("create_note", title="Cart", body="the card game")  # "card" in one note
    for i in range(3):
        await call("create_note", title=f"Report {i}", body="a cart of apples")  # "cart" in four
    assert (await titles(call, "carx"))[1] == "cart"


async def test_another_users_words_are_never_suggested(call, bob: Caller, fable: Fable, alice: Caller) -> None:
    await call("create_note", title="Kitchen renovation", body="cabinets", as_=bob)
    await call("create_note", title="Kitten food", body="cans")
    assert await titles(call, "kitchn") == ([], None)  # bob's "kitchen" is not alice's
    assert await titles(call, "kitchn", as_=bob) == (["Kitchen renovation"], "kitchen")
    assert "kitchen" not in await vocabulary(fable, alice)
    assert await vocabulary(fable, bob) == {"kitchen": 1, "renovation": 1, "cabinets": 1}


async def test_deleting_the_last_note_with_a_word_forgets_it(call, fable: Fable, alice: Caller) -> None:
    first = await call("create_note", title="Kitchen", body="tiles")
    second = await call("create_note", title="Kitchen lights", body="lamps")
    assert (await vocabulary(fable, alice))["kitchen"] == 2
    await call("delete_note", note_id=first["id"])
    assert (await vocabulary(fable, alice))["kitchen"] == 1
    assert (await titles(call, "kitchn"))[1] == "kitchen"
    await call("delete_note", note_id=second["id"])
    assert await vocabulary(fable, alice) == {}
    assert await titles(call, "kitchn") == ([], None)


async def test_deleting_a_project_with_its_notes_forgets_their_words(call, fable: Fable, alice: Caller) -> None:
    project = await call("create_project", title="Renovation")
    await call("create_note", title="Kitchen", body="tiles", project_id=project["id"])
    await call("create_note", title="Bathroom", body="tiles", project_id=project["id"])
    await call("create_note", title="Garden", body="tiles")
    await call("delete_project", project_id=project["id"], notes="detach")
    assert await vocabulary(fable, alice) == {"kitchen": 1, "bathroom": 1, "garden": 1, "tiles": 3}
    other = await call("create_project", title="Other")
    await call("update_note", note_id=(await call("search_notes", query="kitchen"))["items"][0]["id"],
               project_id=other["id"])
    await call("delete_project", project_id=other["id"], notes="delete")
    assert await vocabulary(fable, alice) == {"bathroom": 1, "garden": 1, "tiles": 2}


async def test_an_edit_counts_the_words_gained_and_uncounts_the_ones_lost(call, fable: Fable, alice: Caller) -> None:
    note = await call("create_note", title="Kitchen", body="tiles and lamps")
    await call("update_note", note_id=note["id"], body="lamps and chairs")
    assert await vocabulary(fable, alice) == {"kitchen": 1, "lamps": 1, "chairs": 1}  # "and": a stop word
    await call("edit_note", note_id=note["id"], operation="replace", find="chairs", text="stools")
    await call("update_note", note_id=note["id"], title="Scullery", tags=["home"])
    assert await vocabulary(fable, alice) == {"scullery": 1, "lamps": 1, "stools": 1}
    await call("restore_note_version", note_id=note["id"], version=1)
    assert await vocabulary(fable, alice) == {"kitchen": 1, "tiles": 1, "lamps": 1}


async def test_the_vocabulary_stays_the_count_of_the_notes_words(call, fable: Fable, alice: Caller, bob) -> None:
    """Every way notes are written: created, imported, edited, renamed (rewriting the links of
    other notes), completed (a recurring task's next one), deleted, with a project (restores:
    above)."""
    target = await call("create_note", title="Pantry", body="Shelves of jars")
    linker = await call("create_note", title="Shopping", body="Restock the [[Pantry]] and the freezer")
    await call("import_notes", notes=[{"title": f"Imported {w}", "body": f"{w} and more {w}"}
                                      for w in ("flour", "sugar", "pantry")])
    task = await call("create_note", title="Water plants", body="balcony", due_date="2026-05-01",
                      recurrence_rule="FREQ=WEEKLY")
    await call("update_note", note_id=target["id"], title="Larder cupboard")  # rewrites the link in Shopping
    assert "Larder cupboard" in (await call("read_note", note_id=linker["id"]))["body"]
    await call("update_note", note_id=task["id"], status="done")
    await call("edit_note", note_id=linker["id"], operation="append", text="Buy rice.")
    project = await call("create_project", title="Cellar")
    await call("create_note", title="Wine rack", body="bottles", project_id=project["id"])
    await call("delete_project", project_id=project["id"], notes="delete")
    await call("delete_note", note_id=linker["id"])
    await call("create_note", title="Pantry of bob", body="jars", as_=bob)
    for caller in (alice, bob):
        assert await vocabulary(fable, caller) == await counted_afresh(fable, caller)
    words = await vocabulary(fable, alice)
    assert words["pantry"] == 1 and words["larder"] == 1 and words["plants"] == 2 and "freezer" not in words


async def test_a_refused_write_leaves_the_vocabulary_as_it_was(call, fails, fable: Fable, alice: Caller) -> None:
    await call("create_note", title="Kitchen", body="tiles")
    before = await vocabulary(fable, alice)
    await fails(call("create_note", title="Kitchen", body="cupboards"), Conflict)
    await fails(call("import_notes", notes=[{"title": "Lamps", "body": "bulbs"}, {"title": "Kitchen"}],
                     on_duplicate="fail"), Conflict)
    assert await vocabulary(fable, alice) == before
