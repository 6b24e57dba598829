"""Embeddings written on save and backfilled, re-embedding on a model change, hybrid search,
the semantic near-duplicate check, and retrieval into a chat's context."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import select, text
from support.chat import new_conversation, turn
from support.fake_llm import FakeLLM, Reply, embed_text
from support.pace import scaled

from fable_core.assistant.context import INJECT_RELEVANCE, SUGGEST_RELEVANCE
from fable_core.assistant.embeddings import EmbeddingWorker
from fable_core.assistant.service import Assistant
from fable_core.config import Settings
from fable_core.db.models import Note, NoteEmbedding
from fable_core.errors import NeedsConfirmation
from fable_core.knowledge.vectors import note_text
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

LONG = "Pack the passport, the phone charger, a travel adapter, warm socks and the train tickets for Berlin."


def cosine(a: str, b: str) -> float:
    return sum(x * y for x, y in zip(embed_text(a), embed_text(b), strict=True))


@pytest.fixture
async def worker(assistant: Assistant) -> EmbeddingWorker:
    assert assistant.worker is not None
    return assistant.worker


async def embeddings(fable: Fable) -> dict[int, tuple[str, int]]:
    async with fable.db.transaction() as s:
        rows = await s.execute(select(NoteEmbedding.note_id, NoteEmbedding.model, NoteEmbedding.dims))
        return {note_id: (model, dims) for note_id, model, dims in rows}


async def test_notes_are_embedded_after_save_and_again_when_their_text_changes(
    ai_fable: Fable, worker: EmbeddingWorker, fake: FakeLLM, alice: Caller
) -> None:
    note = await ai_fable.call("create_note", {"title": "Berlin trip", "body": "packing list"}, alice)
    await worker.idle(backfill=False)
    assert await embeddings(ai_fable) == {note["id"]: ("fake-embed", 128)}
    calls = fake.embed_calls
    await ai_fable.call("update_note", {"note_id": note["id"], "tags": ["travel"]}, alice)
    await worker.idle(backfill=False)
    assert fake.embed_calls == calls, "a tag change does not re-embed"
    await ai_fable.call("update_note", {"note_id": note["id"], "body": "museum tickets"}, alice)
    await worker.idle(backfill=False)
    assert fake.embed_calls == calls + 1
    async with ai_fable.db.transaction() as s:
        stored = await s.scalar(select(NoteEmbedding.embedding).where(NoteEmbedding.note_id == note["id"]))
    assert list(stored) == pytest.approx(embed_text(note_text("Berlin trip", "museum tickets")), abs=1e-6)
    async with ai_fable.db.transaction() as s:
        index = await s.scalar(text("SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_note_embeddings_hnsw_128'"))
    assert "hnsw" in index and "vector(128)" in index and "dims = 128" in index


async def test_old_notes_are_backfilled(ai_fable: Fable, worker: EmbeddingWorker, alice: Caller) -> None:
    async with ai_fable.db.transaction() as s:  # written behind the app's back: no events
        s.add_all([Note(user_id=alice.user_id, title=f"Old note {i}", body="from before", version=1)
                   for i in range(5)])
    assert await embeddings(ai_fable) == {}
    assert await worker.backfill() == 5
    await worker.idle(backfill=False)
    assert len(await embeddings(ai_fable)) == 5
    assert await worker.backfill() == 0


@pytest.fixture
async def other_model(ai_settings: Settings) -> AsyncIterator[Fable]:
    app = await Fable.open(ai_settings.model_copy(update={"embed_model": "other-embed"}))
    yield app
    await app.close()


async def test_changing_the_embedding_model_re_embeds(
    ai_fable: Fable, worker: EmbeddingWorker, other_model: Fable, alice: Caller
) -> None:
    for title in ("One", "Two", "Three"):
        await ai_fable.call("create_note", {"title": title}, alice)
    await worker.idle(backfill=False)
    assert {m for m, _ in (await embeddings(ai_fable)).values()} == {"fake-embed"}
    other: EmbeddingWorker = other_model.assistant.worker
    assert await other.backfill() == 3
    await other.idle(backfill=False)
    assert {m for m, _ in (await embeddings(ai_fable)).values()} == {"other-embed"}


async def test_search_is_hybrid_and_finds_notes_by_meaning(
    ai_fable: Fable, worker: EmbeddingWorker, alice: Caller
) -> None:
    packing = await ai_fable.call(
        "create_note", {"title": "Berlin packing", "body": "passport charger adapter socks"}, alice)
    await ai_fable.call("create_note", {"title": "Tax return", "body": "receipts and forms"}, alice)
    await worker.idle(backfill=False)
    query = "berlin passport weekend"  # "weekend" is in no note: full-text alone finds nothing
    keyword_only = await ai_fable.call("list_notes", {"text": query}, alice)
    assert keyword_only["items"] == []
    found = await ai_fable.call("search_notes", {"query": query}, alice)
    assert found["mode"] == "hybrid"
    assert [hit["id"] for hit in found["items"]] == [packing["id"]]
    both = await ai_fable.call("search_notes", {"query": "receipts"}, alice)
    assert both["items"][0]["title"] == "Tax return" and "**receipts**" in both["items"][0]["snippet"]


async def test_hybrid_search_pages_and_filters(ai_fable: Fable, worker: EmbeddingWorker, alice: Caller) -> None:
    for i in range(7):
        await ai_fable.call("create_note", {"title": f"Garden plan {i}", "body": "tomatoes basil",
                                            "tags": ["garden"] if i % 2 else []}, alice)
    await worker.idle(backfill=False)
    first = await ai_fable.call("search_notes", {"query": "tomatoes", "limit": 4}, alice)
    second = await ai_fable.call(
        "search_notes", {"query": "tomatoes", "limit": 4, "cursor": first["next_cursor"]}, alice)
    ids = [h["id"] for h in first["items"] + second["items"]]
    assert len(ids) == len(set(ids)) == 7 and second["next_cursor"] is None
    tagged = await ai_fable.call("search_notes", {"query": "tomatoes", "tag": "garden"}, alice)
    assert tagged["mode"] == "hybrid" and len(tagged["items"]) == 3


async def test_hybrid_search_corrects_a_misspelt_word_too(
    ai_fable: Fable, worker: EmbeddingWorker, alice: Caller
) -> None:
    packing = await ai_fable.call("create_note", {"title": "Berlin packing", "body": "passport charger"}, alice)
    await ai_fable.call("create_note", {"title": "Tax return", "body": "receipts and forms"}, alice)
    await worker.idle(backfill=False)
    found = await ai_fable.call("search_notes", {"query": "pasport"}, alice)
    assert found["mode"] == "hybrid" and found["corrected"] == "passport"
    assert found["items"][0]["id"] == packing["id"] and "**passport**" in found["items"][0]["snippet"]
    exact = await ai_fable.call("search_notes", {"query": "passport"}, alice)
    assert exact["mode"] == "hybrid" and "corrected" not in exact


async def test_a_query_embedding_that_times_out_says_so_and_keyword_results_still_come(
    ai_fable: Fable, assistant: Assistant, worker: EmbeddingWorker, fake: FakeLLM, alice: Caller
) -> None:
    """A busy embedding server (one CPU thread embedding a backlog) used to give a search in
    keyword mode with no word why, and with 0 results for words unlike the note's: the results say
    why meaning was not searched, and the keyword matches still come."""
    note = await ai_fable.call("create_note", {"title": "Boiler service", "body": "annual boiler check"}, alice)
    await worker.idle(backfill=False)
    embedder = assistant.embedder
    assert embedder is not None
    embedder.query_timeout, fake.embed_hold = 0.3, threading.Event()
    try:
        found = await ai_fable.call("search_notes", {"query": "boiler"}, alice)
        refused = await ai_fable.call("search_notes", {"query": "boiler maintenance"}, alice)  # in the back-off
    finally:
        fake.embed_hold.set()
    assert found["mode"] == "keyword" and [h["id"] for h in found["items"]] == [note["id"]]
    assert found["keyword_only"] == "the embedding server did not answer within 0.3 s (busy)"
    assert refused["mode"] == "keyword" and refused["keyword_only"].startswith("the embedding server failed a moment")
    embedder._down_until = 0.0  # the back-off over
    again = await ai_fable.call("search_notes", {"query": "boiler"}, alice)
    assert again["mode"] == "hybrid" and "keyword_only" not in again


async def test_search_without_a_provider_is_keyword_only(fable: Fable, alice: Caller) -> None:
    await fable.call("create_note", {"title": "Berlin packing", "body": "passport"}, alice)
    found = await fable.call("search_notes", {"query": "passport"}, alice)
    assert found["mode"] == "keyword" and len(found["items"]) == 1
    assert "keyword_only" not in found, "no embedding model set up: nothing missed"


async def test_a_semantic_near_duplicate_needs_confirmation(
    ai_fable: Fable, worker: EmbeddingWorker, alice: Caller
) -> None:
    first = await ai_fable.call("create_note", {"title": "Trip checklist", "body": LONG}, alice)
    await worker.idle(backfill=False)
    assert cosine(note_text("Berlin list", LONG), note_text("Trip checklist", LONG)) >= 0.90
    with pytest.raises(NeedsConfirmation) as refused:
        await ai_fable.call("create_note", {"title": "Berlin list", "body": LONG}, alice)
    assert refused.value.details["similar_note_id"] == first["id"]
    assert refused.value.details["requires_confirmation"] is True
    async with ai_fable.db.transaction() as s:
        assert await s.scalar(select(text("count(*)")).select_from(Note)) == 1, "nothing written"
    confirmed = await ai_fable.call("create_note", {"title": "Berlin list", "body": LONG, "confirm": True}, alice)
    assert confirmed["id"] != first["id"]
    short = await ai_fable.call("create_note", {"title": "Short one", "body": "Trip checklist"}, alice)
    assert short["id"], "bodies under 80 characters are never checked"


async def test_the_model_is_asked_to_confirm_a_near_duplicate(
    ai_fable: Fable, assistant: Assistant, worker: EmbeddingWorker, fake: FakeLLM, alice: Caller
) -> None:
    await ai_fable.call("create_note", {"title": "Trip checklist", "body": LONG}, alice)
    await worker.idle(backfill=False)
    conv = await new_conversation(ai_fable, alice)
    fake.replies.extend([Reply("", [("create_note", {"title": "Berlin list", "body": LONG})]),
                         Reply("You already have that note.")])
    events = await turn(assistant, alice, conv, "save my berlin packing list")
    result = next(e.data for e in events if e.event == "tool_result")
    assert result["requires_confirmation"] and result["error"]["type"] == "needs_confirmation"
    assert result["confirm_arguments"] == {"title": "Berlin list", "body": LONG, "confirm": True}


async def test_context_injects_close_notes_and_suggests_nearby_ones(
    ai_fable: Fable, assistant: Assistant, worker: EmbeddingWorker, fake: FakeLLM, alice: Caller
) -> None:
    message = "berlin trip packing list"
    close = ("Berlin trip packing list", "berlin trip packing list " + "x" * 900)
    near = ("Berlin weekend", "snacks museums tickets hotel train for the trip with friends")
    far = ("Tax return", "receipts forms deadline")
    assert assistant.embedder is not None
    calibration = await assistant.embedder.calibrated()  # the fake model's, from the probe texts
    inject = calibration.similarity_at(embed_text(message), INJECT_RELEVANCE)
    suggest = calibration.similarity_at(embed_text(message), SUGGEST_RELEVANCE)
    assert 0.2 < suggest < inject < 0.4, "bag-of-words: unrelated texts share few words"
    assert cosine(message, note_text(*close)) >= inject
    assert suggest <= cosine(message, note_text(*near)) < inject
    assert cosine(message, note_text(*far)) < suggest
    ids = {}
    for title, body in (close, near, far):
        ids[title] = (await ai_fable.call("create_note", {"title": title, "body": body}, alice))["id"]
    project = await ai_fable.call("create_project", {"title": "Work"}, alice)
    await ai_fable.call("create_note", {"title": "Office Q3 planning", "body": "berlin trip packing list",
                                        "project_id": project["id"]}, alice)
    attached = await ai_fable.call("create_note", {"title": "Hotel", "body": "Room 12, breakfast at 8."}, alice)
    await worker.idle(backfill=False)
    conv = await new_conversation(ai_fable, alice)
    events = await turn(assistant, alice, conv, message, note_ids=[attached["id"]])
    context = events[0].data
    assert [n["id"] for n in context["used"]] == [ids[close[0]]], "the project's note is out of scope"
    assert [n["id"] for n in context["suggested"]] == [ids[near[0]]]
    assert context["attached"] == [{"id": attached["id"], "title": "Hotel"}]
    system, *_, asked = fake.chat_bodies()[0]["messages"]
    assert asked["role"] == "user" and asked["content"].endswith(f"\n\n---\n\n{message}")
    assert "Room 12, breakfast at 8." in asked["content"]
    assert "berlin trip packing list " + "x" * 775 in asked["content"] and "x" * 800 not in asked["content"], \
        "800 characters"
    assert "snacks museums" not in asked["content"], "suggested notes are not injected"
    assert "Room 12" not in system["content"], "the system prompt stays the same from turn to turn"

    excluded = await turn(assistant, alice, conv, message, exclude_note_id=ids[close[0]])
    assert excluded[0].data["used"] == []


async def test_connections_scan_hnsw_indexes_iteratively(ai_fable: Fable, alice: Caller) -> None:
    from fable_core.knowledge.vectors import nearest

    async with ai_fable.db.transaction() as s:
        await nearest(s, alice, embed_text("anything"), "fake-embed", limit=5)
        assert await s.scalar(text("SHOW hnsw.iterative_scan")) == "relaxed_order"


async def test_a_connection_first_used_in_autocommit_mode_keeps_the_iterative_scan(ai_fable: Fable) -> None:
    # The setting is made as each connection opens; a first checkout in autocommit mode (as
    # read-only tool calls and chat turns use) must not roll it back.
    await ai_fable.db.engine.dispose()
    async with ai_fable.db.reading() as s:
        assert await s.scalar(text("SHOW hnsw.iterative_scan")) == "relaxed_order"
    async with ai_fable.db.transaction() as s:
        assert await s.scalar(text("SHOW hnsw.iterative_scan")) == "relaxed_order"


async def test_the_worker_waits_while_an_answer_streams_on_its_server(
    ai_fable: Fable, worker: EmbeddingWorker, fake: FakeLLM, alice: Caller
) -> None:
    assert worker.gate is ai_fable.assistant.gate, "embeddings and chat share the fake Ollama"
    release = threading.Event()
    fake.plain_replies.append(Reply('{"kind": "note", "title": "Held"}', hold=release))
    capture = asyncio.create_task(ai_fable.call("quick_capture", {"text": "held"}, alice))
    try:
        for _ in range(round(scaled(5) / 0.01)):
            if worker.gate.running:
                break
            await asyncio.sleep(0.01)
        assert worker.gate.running == 1
        calls = fake.embed_calls
        note = await ai_fable.call("create_note", {"title": "Written while the model answers"}, alice)
        await asyncio.sleep(0.5)
        assert fake.embed_calls == calls, "nothing reaches the server while the answer streams"
        assert note["id"] not in await embeddings(ai_fable)
    finally:
        release.set()
        await capture
    await worker.idle(backfill=False)
    assert note["id"] in await embeddings(ai_fable), "and the worker resumes once it has ended"


async def test_retrieval_reaches_notes_shared_with_the_caller_and_no_others(
    ai_fable: Fable, assistant: Assistant, worker: EmbeddingWorker, fake: FakeLLM, alice: Caller, bob: Caller
) -> None:
    """bob's chat retrieves alice's note in the project she shares with him, never her note
    shared with no one, however close; revoked, the shared one is gone from his next turn."""
    message = "berlin trip packing list"
    house = await ai_fable.call("create_project", {"title": "Trips"}, alice)
    shared = await ai_fable.call("create_note", {
        "title": "Berlin trip packing list", "body": "berlin trip packing list passport", "project_id": house["id"]},
        alice)
    await ai_fable.call("create_note", {"title": "Private diary", "body": "berlin trip packing list diary"}, alice)
    share = await ai_fable.call("share", {"project_id": house["id"], "with_user": "bob"}, alice)
    await worker.idle(backfill=False)
    conv = await new_conversation(ai_fable, bob, rag_project_id=-1)
    context = (await turn(assistant, bob, conv, message))[0].data
    assert [n["id"] for n in context["used"] + context["suggested"]] == [shared["id"]]
    assert "diary" not in json.dumps(fake.chat_bodies()[0]["messages"])
    await ai_fable.call("unshare", {"share_id": share["id"]}, alice)
    after = (await turn(assistant, bob, conv, message))[0].data
    assert after["used"] == [] and after["suggested"] == []


async def test_link_suggestions_use_embeddings_when_the_note_has_one(
    ai_fable: Fable, worker: EmbeddingWorker, alice: Caller
) -> None:
    trip = await ai_fable.call("create_note", {"title": "Berlin packing", "body": LONG}, alice)
    await ai_fable.call("create_note", {"title": "Tax return", "body": "Receipts, forms and the deadline in May."},
                        alice)
    note = await ai_fable.call("create_note", {"title": "Travel", "body": LONG.replace("Berlin", "Vienna")}, alice)
    await worker.idle(backfill=False)
    found = await ai_fable.call("suggest_links", {"note_id": note["id"]}, alice)
    assert found["mode"] == "semantic"
    assert [(s["id"], s["reason"]) for s in found["items"]] == [(trip["id"], "close")]
