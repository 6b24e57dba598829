"""Queries and documents marked the way the embedding model expects: the known prefixes, the
settings that override them, what goes over the wire, re-embedding when the document marking
changes, and ``input_type`` for servers that mark texts themselves (a separate embedding server)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from sqlalchemy import select
from support.fake_llm import FakeLLM, openai_app
from support.servers import free_port, serve_in_thread

from fable_core.assistant.prefixes import BGE_QUERY, Marking, known_prefixes, marking_for
from fable_core.config import Settings
from fable_core.db.models import NoteEmbedding
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

BODY = "Feed the starter every evening with rye flour and water; it doubles in about six hours."


@pytest.mark.parametrize(("model", "query", "document"), [
    ("nomic-embed-text", "search_query: ", "search_document: "),
    ("nomic-embed-text:v1.5", "search_query: ", "search_document: "),
    ("intfloat/multilingual-e5-small", "query: ", "passage: "),
    ("multilingual-e5-small-q4", "query: ", "passage: "),
    ("bge-small-en-v1.5", BGE_QUERY, ""),
    ("mxbai-embed-large", "", ""),
    ("fake-embed", "", ""),
])
def test_known_models_get_their_prefixes(model: str, query: str, document: str) -> None:
    assert known_prefixes(model) == (query, document)


def test_settings_override_the_prefixes(settings: Settings) -> None:
    e5 = settings.model_copy(update={"embed_model": "multilingual-e5-small"})
    assert marking_for(e5) == Marking("multilingual-e5-small", "query: ", "passage: ")
    custom = e5.model_copy(update={"embed_query_prefix": "Q: ", "embed_document_prefix": "none"})
    assert marking_for(custom) == Marking("multilingual-e5-small", "Q: ", "")
    server_side = e5.model_copy(update={"embed_input_type": True})
    assert marking_for(server_side) == Marking("multilingual-e5-small", "", "", input_type=True), \
        "the server marks the text: Fable adds nothing, so nothing is marked twice"
    assert marking_for(e5).space == "multilingual-e5-small ['passage: ']"
    assert marking_for(server_side).space == "multilingual-e5-small [input_type]"
    assert marking_for(settings.model_copy(update={"embed_model": "fake-embed"})).space == "fake-embed"


@pytest.fixture
async def nomic(ai_settings: Settings) -> AsyncIterator[Fable]:
    app = await Fable.open(ai_settings.model_copy(update={"embed_model": "nomic-embed-text"}))
    yield app
    await app.close()


def inputs(fake: FakeLLM) -> list[str]:
    return [text for body in fake.embed_bodies for text in body["input"]]


async def stored_models(fable: Fable) -> set[str]:
    async with fable.db.reading() as s:
        return set((await s.execute(select(NoteEmbedding.model))).scalars())


async def test_notes_are_embedded_as_documents_and_searches_as_queries(
    nomic: Fable, fake: FakeLLM, alice: Caller
) -> None:
    worker = nomic.assistant.worker
    note = await nomic.call("create_note", {"title": "Sourdough", "body": BODY}, alice)
    await worker.idle(backfill=False)
    assert inputs(fake).count(f"search_document: Sourdough\n\n{BODY}") == 2, \
        "the worker and the near-duplicate check (a note compared with notes) embed it as a document"
    assert await stored_models(nomic) == {"nomic-embed-text ['search_document: ']"}
    found = await nomic.call("search_notes", {"query": "how often do I feed it"}, alice)
    assert "search_query: how often do I feed it" in inputs(fake)
    assert found["mode"] == "hybrid" and found["items"][0]["id"] == note["id"]
    assert not [t for t in inputs(fake) if not t.startswith(("search_query: ", "search_document: "))]


async def test_changing_the_document_prefix_re_embeds(
    nomic: Fable, ai_settings: Settings, fake: FakeLLM, alice: Caller
) -> None:
    for title in ("One", "Two"):
        await nomic.call("create_note", {"title": title}, alice)
    await nomic.assistant.worker.idle(backfill=False)
    assert await nomic.assistant.worker.backfill() == 0
    changed = await Fable.open(ai_settings.model_copy(update={
        "embed_model": "nomic-embed-text", "embed_document_prefix": "document: "}))
    try:
        assert await changed.assistant.worker.backfill() == 2
        await changed.assistant.worker.idle(backfill=False)
        assert await stored_models(nomic) == {"nomic-embed-text ['document: ']"}
        assert "document: One\n\n" in inputs(fake)
    finally:
        await changed.close()
    query_only = await Fable.open(ai_settings.model_copy(update={
        "embed_model": "nomic-embed-text", "embed_document_prefix": "document: ", "embed_query_prefix": "q: "}))
    try:
        assert await query_only.assistant.worker.backfill() == 0, "the query prefix is not in the stored notes"
    finally:
        await query_only.close()


@pytest.fixture(scope="module")
def embedding_server(fake_state: FakeLLM) -> Iterator[str]:
    """A second OpenAI-compatible server (no key), serving only embeddings for these tests."""
    with serve_in_thread(openai_app(fake_state)) as url:
        yield url + "/v1"


@pytest.fixture
async def separate(ai_settings: Settings, embedding_server: str) -> AsyncIterator[Fable]:
    app = await Fable.open(ai_settings.model_copy(update={
        "embed_base_url": embedding_server, "embed_model": "multilingual-e5-small-q4", "embed_input_type": True}))
    yield app
    await app.close()


async def test_a_server_that_marks_texts_itself_gets_input_type_and_the_bare_text(
    separate: Fable, fake: FakeLLM, alice: Caller
) -> None:
    worker = separate.assistant.worker
    assert worker.gate is None, "a separate embedding server does not wait for the chat's"
    await separate.call("create_note", {"title": "Sourdough", "body": BODY}, alice)
    await worker.idle(backfill=False)
    await separate.call("search_notes", {"query": "feeding the starter"}, alice)
    sent = {(body["input_type"], text) for body in fake.embed_bodies for text in body["input"]}
    assert ("document", f"Sourdough\n\n{BODY}") in sent
    assert ("query", "feeding the starter") in sent
    assert all(body["model"] == "multilingual-e5-small-q4" for body in fake.embed_bodies)
    assert not [t for _, t in sent if t.startswith(("query: ", "passage: "))]
    assert await stored_models(separate) == {"multilingual-e5-small-q4 [input_type]"}


async def test_health_asks_the_embedding_server_itself_for_semantic_search(
    ai_settings: Settings, embedding_server: str, fake: FakeLLM
) -> None:
    """With ``EMBED_BASE_URL``, whether search by meaning works is the embedding server's answer,
    not the chat server's: health used to say "off" while hybrid search worked, and nothing when
    the embedding server was down."""
    gone = f"http://127.0.0.1:{free_port()}/v1"
    for url, model in ((embedding_server, "fake-embed"), (gone, "nomic-embed-text"), (embedding_server, "e5-gone")):
        app = await Fable.open(ai_settings.model_copy(update={"embed_base_url": url, "embed_model": model}))
        try:
            health = (await app.assistant.status.check()).to_dict()
        finally:
            await app.close()
        assert health["status"] == "ok", "the chat server answers in every case"
        semantic = health["semantic_search"]
        if url == embedding_server and model == "fake-embed":
            assert semantic == {"on": True, "reason": ""}
        elif url == gone:  # the chat server serves nomic-embed-text: only asking the right server tells
            assert not semantic["on"]
            assert semantic["reason"].startswith(f"the embedding server at {gone} does not answer")
        else:
            assert semantic == {"on": False,
                                "reason": f"the embedding model 'e5-gone' is not served by {embedding_server}"}
