"""Typo-tolerant search: each user's vocabulary (the words their notes have had, added as notes
are created and changed) and search_notes correcting a misspelt word with it when it finds few
notes."""

from __future__ import annotations

import base64
import json

import pytest
from sqlalchemy import text

from fable_core.errors import Conflict, InvalidInput
from fable_core.knowledge.vocabulary import respell
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

# the words of the caller's notes as they are now (migration 0010's backfill)
_FROM_NOTES = text("""
    SELECT DISTINCT w.word FROM notes n,
         unnest(tsvector_to_array(to_tsvector('fable_words', concat_ws(' ', n.title, n.body)))) AS w(word)
    WHERE n.user_id = :u AND length(w.word) BETWEEN 3 AND 32
""")


async def vocabulary(fable: Fable, caller: Caller) -> set[str]:
    """The words of the caller's vocabulary."""
    async with fable.db.engine.connect() as conn:
        rows = await conn.execute(text("SELECT word FROM note_words WHERE user_id = :u"), {"u": caller.user_id})
        return set(rows.scalars())


async def words_of_notes(fable: Fable, caller: Caller) -> set[str]:
    async with fable.db.engine.connect() as conn:
        return set((await conn.execute(_FROM_NOTES, {"u": caller.user_id})).scalars())


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


async def test_a_word_only_deleted_notes_had_gives_way_to_a_live_one(call, fable: Fable, alice: Caller) -> None:
    """The vocabulary keeps the words of deleted notes; the next most similar word that finds
    notes is used instead."""
    gone = await call("create_note", title="Week planning", body="monday")
    await call("create_note", title="Garden", body="planting beans")
    assert await titles(call, "planing") == (["Week planning"], "planning")  # the most similar (0.7, "planting" 0.55)
    await call("delete_note", note_id=gone["id"])
    assert "planning" in await vocabulary(fable, alice)  # kept: deletes change nothing
    assert await titles(call, "planing") == (["Garden"], "planting")
    await call("delete_note", note_id=(await call("search_notes", query="planting"))["items"][0]["id"])
    assert await titles(call, "planing") == ([], None)  # no candidate finds a note


async def test_a_misspelt_word_has_the_most_similar_words_as_candidates(call, fable: Fable, alice: Caller) -> None:
    await call("create_note", title="Cartons", body="a cart, two carts, a carton, a cartel; a lamp, lamps, a lampoon")
    async with fable.db.reading() as session:
        # similarity 0.57, 0.5, then "cartel" and "carton" tie at 0.44 and in length: word order
        assert await respell(session, alice, "cartn") == ["cart", "carts", "cartel"]
        assert await respell(session, alice, "cartn lampz -lamp") == [
            "cart lamp -lamp", "carts lamps -lamp", "cartel lampoon -lamp"]
        assert await respell(session, alice, "carts lamp") == []


async def test_another_users_words_are_never_suggested(call, bob: Caller, fable: Fable, alice: Caller) -> None:
    await call("create_note", title="Kitchen renovation", body="cabinets", as_=bob)
    await call("create_note", title="Kitten food", body="cans")
    assert await titles(call, "kitchn") == ([], None)  # bob's "kitchen" is not alice's
    assert await titles(call, "kitchn", as_=bob) == (["Kitchen renovation"], "kitchen")
    assert "kitchen" not in await vocabulary(fable, alice)
    assert await vocabulary(fable, bob) == {"kitchen", "renovation", "cabinets"}


async def test_deletes_leave_the_vocabulary_as_it_was(call, fable: Fable, alice: Caller) -> None:
    project = await call("create_project", title="Renovation")
    await call("create_note", title="Kitchen", body="tiles", project_id=project["id"])
    note = await call("create_note", title="Garden", body="tiles")
    before = await vocabulary(fable, alice)
    await call("delete_project", project_id=project["id"], notes="delete")
    await call("delete_note", note_id=note["id"])
    assert await vocabulary(fable, alice) == before == {"kitchen", "garden", "tiles"}


async def test_an_edit_adds_the_words_it_brings(call, fable: Fable, alice: Caller) -> None:
    note = await call("create_note", title="Kitchen", body="tiles and lamps")
    await call("update_note", note_id=note["id"], body="lamps and chairs")
    assert await vocabulary(fable, alice) == {"kitchen", "tiles", "lamps", "chairs"}  # "and": a stop word
    await call("edit_note", note_id=note["id"], operation="replace", find="chairs", text="stools")
    await call("update_note", note_id=note["id"], title="Scullery", tags=["home"])
    assert await vocabulary(fable, alice) == {"kitchen", "tiles", "lamps", "chairs", "stools", "scullery"}
    await call("restore_note_version", note_id=note["id"], version=1)
    assert (await titles(call, "scullry"))[1] is None  # a word of an old version only: finds nothing
    assert await titles(call, "kitchn") == (["Kitchen"], "kitchen")


async def test_the_vocabulary_holds_every_word_of_the_notes(call, fable: Fable, alice: Caller, bob) -> None:
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
    assert "rice" in await vocabulary(fable, alice)
    project = await call("create_project", title="Cellar")
    await call("create_note", title="Wine rack", body="bottles", project_id=project["id"])
    await call("delete_project", project_id=project["id"], notes="delete")
    await call("delete_note", note_id=linker["id"])
    await call("create_note", title="Pantry of bob", body="jars", as_=bob)
    for caller in (alice, bob):
        assert await vocabulary(fable, caller) >= await words_of_notes(fable, caller)
    assert {"larder", "cupboard", "plants", "freezer", "bottles"} <= await vocabulary(fable, alice)
    assert await vocabulary(fable, bob) == {"pantry", "bob", "jars"}


async def test_a_refused_write_leaves_the_vocabulary_as_it_was(call, fails, fable: Fable, alice: Caller) -> None:
    await call("create_note", title="Kitchen", body="tiles")
    before = await vocabulary(fable, alice)
    await fails(call("create_note", title="Kitchen", body="cupboards"), Conflict)
    await fails(call("import_notes", notes=[{"title": "Lamps", "body": "bulbs"}, {"title": "Kitchen"}],
                     on_duplicate="fail"), Conflict)
    assert await vocabulary(fable, alice) == before
