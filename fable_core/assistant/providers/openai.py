"""Any OpenAI-compatible server over httpx: streamed chat completions (SSE) with tool calls,
embeddings, and the model list. Tool-call arguments arrive as JSON fragments spread over chunks;
they are assembled per index and emitted once the stream says why it finished.

The answer is complete only once a choice carries a ``finish_reason``. ``data: [DONE]`` or the
end of the body without one is a cut answer (:class:`~.base.StreamCut`): llama.cpp's server
(``--interrupt_requests``, its default) ends a running stream that way when any other request
arrives."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from fable_core.assistant.providers.base import (
    WHERE,
    ChatChunk,
    Health,
    Message,
    Provider,
    StreamCut,
    ToolCall,
    prompt_tokens,
    served,
    unavailable,
)

__all__ = ["OpenAIProvider", "sse_data"]


async def sse_data(response: httpx.Response) -> AsyncIterator[str]:
    """The ``data:`` payloads of a server-sent event stream, one per event."""
    data: list[str] = []
    async for line in response.aiter_lines():
        if line == "":
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
    if data:
        yield "\n".join(data)


class OpenAIProvider(Provider):
    name = "openai"
    model: str
    embed_model: str

    def __init__(self, base_url: str, model: str, embed_model: str, *, api_key: str | None = None,
                 timeout: float = 300.0, first_token_timeout: float | None = None) -> None:
        self.base_url = self.url = base_url.rstrip("/")
        self.model = model
        self.embed_model = embed_model
        self.timeout = timeout
        self.first_token_timeout = first_token_timeout
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=headers,
                                       timeout=httpx.Timeout(timeout, connect=5.0, read=self.read_timeout(timeout)))

    def _down(self, e: BaseException) -> Exception:
        if isinstance(e, httpx.ConnectError | ConnectionRefusedError):
            return unavailable(f"could not connect to {self.base_url} ({e}): {WHERE.format(setting='OPENAI_BASE_URL')}",
                               provider="openai")
        if isinstance(e, httpx.TimeoutException):
            return unavailable(f"{self.base_url} did not answer within {self.timeout:g} s "
                               f"({type(e).__name__})", provider="openai")
        return unavailable(f"the OpenAI-compatible server at {self.base_url} did not answer "
                           f"({type(e).__name__}: {e})", provider="openai")

    def chat_stream(
        self, messages: list[Message], tools: list[dict[str, Any]] | None = None, *,
        model: str | None = None, max_tokens: int | None = None,
    ) -> AsyncIterator[ChatChunk]:
        return self.first_in_time(self._chat(messages, tools, model=model or self.model, max_tokens=max_tokens),
                                  prompt_tokens(messages, tools))

    async def _chat(self, messages: list[Message], tools: list[dict[str, Any]] | None, *,
                    model: str, max_tokens: int | None) -> AsyncIterator[ChatChunk]:
        body: dict[str, Any] = {"model": model, "stream": True,
                                "messages": [_to_openai(m) for m in messages]}
        if tools:
            body["tools"] = tools
        if max_tokens:
            body["max_tokens"] = max_tokens
        if self.known_models is not None and not served(model, self.known_models):
            # llama.cpp's server answers any name with the model it has: a name it does not list fails here
            raise await self.missing_model(model)
        try:
            async with self._http.stream("POST", "/chat/completions", json=body) as response:
                if response.status_code == 404 and _model_not_found(await response.aread()):
                    raise await self.missing_model(model)
                await _raise_for_status(response)
                async for chunk in _chunks(response):
                    yield chunk
        except (httpx.HTTPError, OSError) as e:
            raise self._down(e) from e
        except StreamCut as e:
            raise StreamCut(f"the answer from {self.base_url} was cut off before the model finished ({e}; "
                            "another request to the server may have interrupted it)", provider="openai") from None

    async def embed(self, texts: list[str], *, input_type: str | None = None) -> list[list[float]]:
        body: dict[str, Any] = {"model": self.embed_model, "input": texts}
        if input_type:
            body["input_type"] = input_type
        try:
            response = await self._http.post("/embeddings", json=body)
            await _raise_for_status(response)
        except (httpx.HTTPError, OSError) as e:
            raise self._down(e) from e
        data = sorted(response.json()["data"], key=lambda d: d.get("index", 0))
        return [list(map(float, d["embedding"])) for d in data]

    async def health(self) -> Health:
        try:
            names = [m["name"] for m in await self.list_models()]
        except Exception as e:  # noqa: BLE001 - any failure means "down"; health never raises
            return Health("openai", "down", self.model, self.embed_model, detail=str(e),
                          semantic_off=f"the embedding server at {self.base_url} does not answer")
        return self.checked(names)

    async def list_models(self) -> list[dict[str, Any]]:
        try:
            response = await self._http.get("/models")
            await _raise_for_status(response)
        except (httpx.HTTPError, OSError) as e:
            raise self._down(e) from e
        return [{"name": m["id"], "size": None, "modified_at": str(m.get("created", ""))}
                for m in response.json().get("data", [])]

    async def close(self) -> None:
        await self._http.aclose()


async def _raise_for_status(response: httpx.Response) -> None:
    if response.status_code >= 400:
        await response.aread()
        raise httpx.HTTPStatusError(
            f"{response.status_code}: {response.text[:300]}", request=response.request, response=response
        )


def _model_not_found(body: bytes) -> bool:
    """Whether a 404 says the model is unknown (OpenAI's ``model_not_found``, vLLM's "does not
    exist", Ollama's "not found"), not that the route is."""
    text = body.decode(errors="replace").lower()
    return "model" in text and ("not found" in text or "not_found" in text or "does not exist" in text)


async def _chunks(response: httpx.Response) -> AsyncIterator[ChatChunk]:
    """The answer's chunks, ending with ``done``; :class:`StreamCut` if no choice finished."""
    pending: dict[int, dict[str, Any]] = {}
    finished = False
    async for data in sse_data(response):
        if data.strip() == "[DONE]":
            break
        choice = (json.loads(data).get("choices") or [{}])[0]
        delta = choice.get("delta") or {}
        for call in delta.get("tool_calls") or []:
            slot = pending.setdefault(call.get("index", 0), {"id": "", "name": "", "arguments": ""})
            fn = call.get("function") or {}
            slot["id"] = call.get("id") or slot["id"]
            slot["name"] += fn.get("name") or ""
            slot["arguments"] += fn.get("arguments") or ""
        ends = choice.get("finish_reason") is not None
        calls = _complete_calls(pending) if ends else ()
        if delta.get("content") or calls:
            yield ChatChunk(text=delta.get("content") or "", tool_calls=calls)
        if ends:
            pending, finished = {}, True
    if not finished:  # half a tool call is no call: ``pending`` is dropped with the answer
        raise StreamCut("the stream ended without a finish_reason")
    yield ChatChunk(done=True)


def _complete_calls(pending: dict[int, dict[str, Any]]) -> tuple[ToolCall, ...]:
    calls = []
    for index in sorted(pending):
        slot = pending[index]
        try:
            arguments = json.loads(slot["arguments"] or "{}")
        except json.JSONDecodeError:
            arguments = {"_invalid_json": slot["arguments"]}
        calls.append(ToolCall(slot["id"] or f"call_{index}", slot["name"], arguments))
    return tuple(calls)


def _to_openai(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message["role"], "content": message.get("content") or ""}
    if message.get("tool_calls"):
        out["tool_calls"] = [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
            for c in message["tool_calls"]
        ]
    if message["role"] == "tool":
        out["tool_call_id"] = message.get("tool_call_id", "")
    return out
