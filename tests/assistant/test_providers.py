"""Both providers against the fakes over real HTTP: streamed text and tool calls, embeddings,
health, and the one clear error when the server is down or not configured."""

from __future__ import annotations

import pytest
from support.fake_llm import FakeLLM, Reply, embed_text
from support.servers import free_port

from fable_core.assistant.providers import ChatChunk, NoProvider, ToolCall
from fable_core.assistant.providers.ollama import OllamaProvider
from fable_core.assistant.providers.openai import OpenAIProvider
from fable_core.errors import Unavailable

TOOLS = [{"type": "function", "function": {"name": "create_note", "description": "Create a note",
                                           "parameters": {"type": "object", "properties": {}}}}]


@pytest.fixture(params=["ollama", "openai"])
async def provider(request: pytest.FixtureRequest, ollama_url: str, openai_url: str):
    p = (OllamaProvider(ollama_url, "qwen3:8b", "nomic-embed-text") if request.param == "ollama"
         else OpenAIProvider(openai_url, "gpt-test", "embed-test", api_key="test-key"))
    yield p
    await p.close()


async def collect(stream) -> list[ChatChunk]:
    return [chunk async for chunk in stream]


async def test_streams_text_then_tool_calls(provider, fake: FakeLLM) -> None:
    fake.replies.append(Reply("Creating it now.", [("create_note", {"title": "Buy milk", "status": "todo"})]))
    chunks = await collect(provider.chat_stream([{"role": "user", "content": "remind me"}], TOOLS))
    assert "".join(c.text for c in chunks) == "Creating it now."
    assert len([c for c in chunks if c.text]) == 3, "streamed word by word, not in one piece"
    calls = [call for c in chunks for call in c.tool_calls]
    assert [(c.name, c.arguments) for c in calls] == [("create_note", {"title": "Buy milk", "status": "todo"})]
    assert chunks[-1].done


async def test_sends_tool_results_back_in_its_wire_format(provider, fake: FakeLLM) -> None:
    history = [
        {"role": "user", "content": "make a note"},
        {"role": "assistant", "content": "",
         "tool_calls": [ToolCall("call_9", "create_note", {"title": "x"}).as_message_part()]},
        {"role": "tool", "tool_call_id": "call_9", "name": "create_note", "content": '{"result": {"id": 1}}'},
    ]
    await collect(provider.chat_stream(history, TOOLS))
    sent = fake.chat_bodies()[-1]["messages"]
    assert sent[2]["content"] == '{"result": {"id": 1}}'
    if isinstance(provider, OllamaProvider):
        assert sent[1]["tool_calls"][0]["function"] == {"name": "create_note", "arguments": {"title": "x"}}
        assert sent[2]["tool_name"] == "create_note"
    else:
        assert sent[1]["tool_calls"][0]["function"] == {"name": "create_note", "arguments": '{"title": "x"}'}
        assert sent[2]["tool_call_id"] == "call_9"


async def test_embeddings_and_health(provider, fake: FakeLLM) -> None:
    vectors = await provider.embed(["berlin trip packing", "tax return"])
    assert vectors == [embed_text("berlin trip packing"), embed_text("tax return")]
    health = await provider.health()
    assert health.status == "ok" and "qwen3:8b" in health.models


@pytest.mark.parametrize("kind", ["ollama", "openai"])
async def test_a_server_that_is_down_gives_one_clear_error(kind: str) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    p = OllamaProvider(url, "m", "e") if kind == "ollama" else OpenAIProvider(url + "/v1", "m", "e")
    try:
        with pytest.raises(Unavailable, match=r"^no model available: .*did not answer"):
            await collect(p.chat_stream([{"role": "user", "content": "hi"}]))
        with pytest.raises(Unavailable, match=r"^no model available"):
            await p.embed(["x"])
        assert (await p.health()).status == "down"
    finally:
        await p.close()


async def test_no_provider_refuses_clearly() -> None:
    p = NoProvider()
    with pytest.raises(Unavailable, match="no model available: LLM_PROVIDER is none"):
        await collect(p.chat_stream([{"role": "user", "content": "hi"}]))
    with pytest.raises(Unavailable, match="no model available"):
        await p.embed(["x"])
    assert (await p.health()).status == "disabled"


async def test_openai_key_is_sent(openai_url: str) -> None:
    p = OpenAIProvider(openai_url, "m", "e", api_key="wrong")
    try:
        with pytest.raises(Unavailable, match="401"):
            await p.embed(["x"])
    finally:
        await p.close()
