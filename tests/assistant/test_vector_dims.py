"""Embeddings of the sizes real models make (384: MiniLM, E5-small; 768: nomic-embed-text), stored
through the per-dimension HNSW index with inserts after the index exists, and searched through it
on the session's embedded server: the paths pgvector built for the wrong CPU crashed on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import select, text
from support.fake_llm import FakeLLM, embed_text

from fable_core.assistant.embeddings import EmbeddingWorker
from fable_core.db.models import NoteEmbedding
from fable_core.knowledge.vectors import note_text
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

TOPICS = ("passport charger adapter socks", "receipts forms deadline tax", "tomatoes basil seedlings garden",
          "boiler service plumber radiator", "train tickets hotel museum berlin")


@pytest.fixture
def sized(ai_fable: Fable, fake: FakeLLM, request: pytest.FixtureRequest) -> Iterator[int]:
    """The fake model answering at this size; its calibration (measured at its first use, at
    whatever size that was) measured again, before and after."""
    embedder = ai_fable.assistant.embedder
    embedder.calibration, fake.dims = None, request.param
    yield request.param
    embedder.calibration, fake.dims = None, 128


@pytest.mark.parametrize("sized", [384, 768], indirect=True)
async def test_real_sized_embeddings_are_written_through_and_found_with_the_hnsw_index(
    ai_fable: Fable, fake: FakeLLM, alice: Caller, sized: int
) -> None:
    worker = ai_fable.assistant.worker
    assert isinstance(worker, EmbeddingWorker)
    first = await ai_fable.call("create_note", {"title": "First of all", "body": TOPICS[0]}, alice)
    await worker.idle(backfill=False)  # the index for this size exists from here on
    notes = [await ai_fable.call("create_note", {"title": f"Note {i}", "body": f"{TOPICS[i % 5]} number {i}"}, alice)
             for i in range(40)]
    await worker.idle(backfill=False)  # 40 inserts into the existing index, in batches
    async with ai_fable.db.transaction() as s:
        sizes = set((await s.execute(select(NoteEmbedding.dims))).scalars())
        index = await s.scalar(text("SELECT indexdef FROM pg_indexes WHERE indexname = :name"),
                               {"name": f"ix_note_embeddings_hnsw_{sized}"})
    assert sizes == {sized} and index is not None and f"vector({sized})" in index

    target = notes[17]
    query = note_text(target["title"], f"{TOPICS[17 % 5]} number 17")
    async with ai_fable.db.transaction() as s:
        await s.execute(text("SET LOCAL enable_seqscan = off"))  # the index, however few the rows
        nearest = text(
            f"SELECT note_id FROM note_embeddings WHERE dims = {sized} "
            f"ORDER BY embedding::vector({sized}) <=> CAST(:q AS vector({sized})) LIMIT 3")
        plan = "\n".join((await s.execute(text("EXPLAIN " + str(nearest)), {"q": str(embed_text(query, sized))}))
                         .scalars())
        found = (await s.execute(nearest, {"q": str(embed_text(query, sized))})).scalars().all()
    assert f"ix_note_embeddings_hnsw_{sized}" in plan
    assert found[0] == target["id"]

    hybrid = await ai_fable.call("search_notes", {"query": f"passport adapter {sized}"}, alice)
    assert hybrid["mode"] == "hybrid" and first["id"] in [hit["id"] for hit in hybrid["items"]]
