"""Scripted fake LLM servers speaking the real wire protocols over real HTTP on 127.0.0.1.

``FakeLLM`` holds the script; ``ollama_app`` serves it as Ollama (NDJSON ``/api/chat``,
``/api/embed``, ``/api/tags``, ``/api/pull``, ...) and ``openai_app`` as an OpenAI-compatible
server (SSE ``/v1/chat/completions`` with tool-call fragments, ``/v1/embeddings``,
``/v1/models``). Embeddings are deterministic hashed bags of words, so texts sharing words are
similar and retrieval tests mean something. Serve them with ``support.servers.serve_in_thread``
(from a thread, so the fake keeps answering while the test's event loop waits); a session-wide
``FakeLLM`` is put back to its empty script with :meth:`FakeLLM.reset` before each test.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

__all__ = ["MODELS", "FakeLLM", "Reply", "embed_text", "ollama_app", "openai_app"]

_WORD = re.compile(r"[a-z0-9]{2,}")
# What the fake servers serve at the start of a test; a chat with any other model is refused with
# 404 as the real servers refuse it.
MODELS = ("qwen3:8b", "nomic-embed-text", "fake-embed")


async def _embedding_held(fake: FakeLLM) -> None:
    if fake.embed_hold is not None:
        await asyncio.to_thread(fake.embed_hold.wait, 30)


def embed_text(text: str, dims: int = 128) -> list[float]:
    """A unit vector: each word adds ±1 at a hashed position. Shared words → high cosine."""
    vec = [0.0] * dims
    for word in _WORD.findall(text.lower()):
        digest = hashlib.md5(word.encode()).digest()
        vec[int.from_bytes(digest[:4], "big") % dims] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec] if any(vec) else [1.0 / math.sqrt(dims)] * dims


@dataclass
class Reply:
    """One scripted answer: ``text`` streamed in ``pieces`` (word by word by default), then
    ``tool_calls`` (name, arguments); ``delay`` seconds between pieces; with ``hold``, nothing
    until that event is set; with ``pause`` (n, event), the first n pieces, then nothing until
    the event is set; with ``cut``, the stream ends without saying the answer is complete
    (OpenAI: ``[DONE]`` with no ``finish_reason``, as llama.cpp's server ends a stream another
    request interrupts; Ollama: no ``done: true`` line)."""

    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    delay: float = 0.0
    hold: threading.Event | None = None  # the answer starts only once this is set (a slow model)
    pause: tuple[int, threading.Event] | None = None  # the rest of the answer waits for the event
    cut: bool = False

    def pieces(self) -> list[str]:
        return re.findall(r"\S+\s*|\s+", self.text) or []


@dataclass
class FakeLLM:
    """The script. Requests carrying tools take ``replies`` in order, others ``plain_replies``;
    with the queue empty, they echo the last user message."""

    dims: int = 128
    replies: deque[Reply] = field(default_factory=deque)
    plain_replies: deque[Reply] = field(default_factory=deque)
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    embed_calls: int = 0
    embed_bodies: list[dict[str, Any]] = field(default_factory=list)  # each embedding request's JSON
    model_lists: int = 0  # GET /api/tags or /v1/models: what a health probe asks
    models: list[str] = field(default_factory=lambda: list(MODELS))
    embed_hold: threading.Event | None = None  # embeddings answer only once this is set (a busy server)
    models_hold: threading.Event | None = None  # so do model lists (a health probe of a busy server)
    any_model: bool = False  # the OpenAI-compatible fake answers any model name, as llama.cpp's server does

    def reset(self) -> None:
        """Back to the start of a test: nothing scripted, nothing received, the default models."""
        self.replies.clear()
        self.plain_replies.clear()
        self.requests.clear()
        self.embed_calls = 0
        self.embed_bodies.clear()
        self.model_lists = 0
        self.models[:] = MODELS
        self.embed_hold = None
        self.models_hold = None
        self.any_model = False

    def reply(self, body: dict[str, Any]) -> Reply:
        self.requests.append(("chat", body))
        queue = self.replies if body.get("tools") else self.plain_replies
        if queue:
            return queue.popleft()
        last = next((m.get("content") or "" for m in reversed(body["messages"]) if m["role"] == "user"), "")
        prefix = "Echo: " if body.get("tools") else "Plain: "
        return Reply(prefix + " ".join(str(last).split()[:12]))

    def embed(self, body: dict[str, Any]) -> list[list[float]]:
        self.embed_calls += 1
        self.embed_bodies.append(body)
        inputs = body["input"]
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        return [embed_text(t, self.dims) for t in texts]

    def chat_bodies(self) -> list[dict[str, Any]]:
        return [body for kind, body in self.requests if kind == "chat"]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())


# --- Ollama -----------------------------------------------------------------------------------


def ollama_app(fake: FakeLLM) -> Starlette:
    async def chat(request: Request) -> Response:
        body = await request.json()
        if body["model"] not in fake.models:
            return JSONResponse({"error": f"model \"{body['model']}\" not found, try pulling it first"},
                                status_code=404)
        reply = fake.reply(body)
        if body.get("stream") is False:
            await _held(reply)
            return JSONResponse(_ollama_line(body, reply.text, reply.tool_calls, done=True))
        return StreamingResponse(_ollama_stream(body, reply), media_type="application/x-ndjson")

    async def embed(request: Request) -> Response:
        body = await request.json()
        await _embedding_held(fake)
        return JSONResponse({"model": body["model"], "embeddings": fake.embed(body)})

    async def tags(_: Request) -> Response:
        if fake.models_hold is not None:
            await asyncio.to_thread(fake.models_hold.wait, 30)
        fake.model_lists += 1
        return JSONResponse({"models": [
            {"name": m, "model": m, "modified_at": "2026-01-01T00:00:00Z", "size": 1000, "digest": "0" * 12,
             "details": {"format": "gguf", "family": "fake"}} for m in fake.models]})

    async def pull(request: Request) -> Response:
        name = (await request.json())["model"]

        async def progress() -> AsyncIterator[bytes]:
            for line in ({"status": "pulling manifest"},
                         {"status": "downloading", "digest": "sha256:1", "total": 100, "completed": 50},
                         {"status": "downloading", "digest": "sha256:1", "total": 100, "completed": 100},
                         {"status": "success"}):
                yield (json.dumps(line) + "\n").encode()
            fake.models.append(name)

        return StreamingResponse(progress(), media_type="application/x-ndjson")

    async def delete(request: Request) -> Response:
        name = (await request.json())["model"]
        if name not in fake.models:
            return JSONResponse({"error": f"model '{name}' not found"}, status_code=404)
        fake.models.remove(name)
        return JSONResponse({})

    async def generate(request: Request) -> Response:
        body = await request.json()
        fake.requests.append(("generate", body))
        return JSONResponse({"model": body["model"], "created_at": _now(), "response": "", "done": True})

    async def version(_: Request) -> Response:
        return JSONResponse({"version": "0.9.0-fake"})

    return Starlette(routes=[
        Route("/api/chat", chat, methods=["POST"]),
        Route("/api/embed", embed, methods=["POST"]),
        Route("/api/tags", tags),
        Route("/api/pull", pull, methods=["POST"]),
        Route("/api/delete", delete, methods=["DELETE"]),
        Route("/api/generate", generate, methods=["POST"]),
        Route("/api/version", version),
    ])


def _ollama_line(body: dict[str, Any], text: str, calls: list[tuple[str, dict[str, Any]]],
                 *, done: bool) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [{"function": {"name": n, "arguments": a}} for n, a in calls]
    line: dict[str, Any] = {"model": body["model"], "created_at": _now(), "message": message, "done": done}
    if done:
        line.update(done_reason="stop", total_duration=1, eval_count=1, prompt_eval_count=1)
    return line


async def _held(reply: Reply) -> None:
    if reply.hold is not None:
        await asyncio.to_thread(reply.hold.wait, 30)


async def _between(reply: Reply, n: int) -> None:
    """What comes before the answer's ``n``-th piece (from 0): its pause, then its delay."""
    if reply.pause is not None and n == reply.pause[0]:
        await asyncio.to_thread(reply.pause[1].wait, 60)
    if reply.delay:
        await asyncio.sleep(reply.delay)


async def _ollama_stream(body: dict[str, Any], reply: Reply) -> AsyncIterator[bytes]:
    await _held(reply)
    for n, piece in enumerate(reply.pieces()):
        await _between(reply, n)
        yield (json.dumps(_ollama_line(body, piece, [], done=False)) + "\n").encode()
    if reply.tool_calls:
        yield (json.dumps(_ollama_line(body, "", reply.tool_calls, done=False)) + "\n").encode()
    if not reply.cut:
        yield (json.dumps(_ollama_line(body, "", [], done=True)) + "\n").encode()


# --- OpenAI-compatible --------------------------------------------------------------------------


def openai_app(fake: FakeLLM, api_key: str | None = None) -> Starlette:
    def refused(request: Request) -> Response | None:
        if api_key and request.headers.get("authorization") != f"Bearer {api_key}":
            return JSONResponse({"error": {"message": "bad key"}}, status_code=401)
        return None

    async def completions(request: Request) -> Response:
        if (bad := refused(request)) is not None:
            return bad
        body = await request.json()
        if body["model"] not in fake.models and not fake.any_model:
            return JSONResponse({"error": {
                "message": f"The model `{body['model']}` does not exist or you do not have access to it.",
                "type": "invalid_request_error", "param": None, "code": "model_not_found"}}, status_code=404)
        reply = fake.reply(body)
        return StreamingResponse(_openai_stream(body, reply), media_type="text/event-stream")

    async def embeddings(request: Request) -> Response:
        if (bad := refused(request)) is not None:
            return bad
        body = await request.json()
        await _embedding_held(fake)
        vectors = fake.embed(body)
        return JSONResponse({"object": "list", "model": body["model"], "data": [
            {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]})

    async def models(request: Request) -> Response:
        if (bad := refused(request)) is not None:
            return bad
        if fake.models_hold is not None:
            await asyncio.to_thread(fake.models_hold.wait, 30)
        fake.model_lists += 1
        return JSONResponse({"object": "list", "data": [
            {"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in fake.models]})

    return Starlette(routes=[
        Route("/v1/chat/completions", completions, methods=["POST"]),
        Route("/v1/embeddings", embeddings, methods=["POST"]),
        Route("/v1/models", models),
    ])


def _sse(payload: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()


async def _openai_stream(body: dict[str, Any], reply: Reply) -> AsyncIterator[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                     "model": body["model"], "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    await _held(reply)

    yield chunk({"role": "assistant", "content": ""})
    for n, piece in enumerate(reply.pieces()):
        await _between(reply, n)
        yield chunk({"content": piece})
    for index, (name, arguments) in enumerate(reply.tool_calls):
        raw = json.dumps(arguments)
        half = len(raw) // 2  # arguments arrive in fragments, as real servers send them
        yield chunk({"tool_calls": [{"index": index, "id": f"call_{index}", "type": "function",
                                     "function": {"name": name, "arguments": raw[:half]}}]})
        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": raw[half:]}}]})
    if not reply.cut:
        yield chunk({}, "tool_calls" if reply.tool_calls else "stop")
    yield b"data: [DONE]\n\n"
