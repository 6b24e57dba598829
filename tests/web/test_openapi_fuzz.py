"""Schemathesis against /api/openapi.json on a real server: requests generated from the schema
(valid ones and invalid ones) must never get a 5xx, and every answer must match the schema the
document declares for it. Deterministic (a fixed seed) and bounded (examples per operation).

Everything the instance depends on is up (a fake Ollama, a fake SearXNG, a fake Nominatim and
Open-Meteo, a real SMTP server on 127.0.0.1), so a 503 is a bug, not a missing model or mail server.
``FUZZ_CHECKS=all`` runs every schemathesis check instead (the stricter ones report requests
refused for reasons a schema cannot state: an opaque cursor, arguments that exclude each other,
a note that is not a task)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from aiosmtpd.smtp import SMTP
from support.fake_llm import FakeLLM, ollama_app
from support.mcp_clients import make_key
from support.searxng import FakeSearxng, searxng_app
from support.servers import serve, serve_in_thread
from support.weather import FakeWeather, weather_app

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app

pytestmark = pytest.mark.slow

SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"
SEED = 20261203
EXAMPLES = 8


async def test_the_api_answers_every_generated_request_as_documented(fable: Fable, alice: Caller,
                                                                     tmp_path: Path) -> None:
    key = await make_key(fable, alice)
    loop = asyncio.get_running_loop()
    smtp = await loop.create_server(lambda: SMTP(Sink()), "127.0.0.1", 0)
    with (serve_in_thread(ollama_app(FakeLLM())) as ollama, serve_in_thread(weather_app(FakeWeather())) as weather,
          serve_in_thread(searxng_app(FakeSearxng())) as searxng):
        settings = fable.settings.model_copy(update={
            "llm_provider": "ollama", "ollama_url": ollama, "smtp_host": "127.0.0.1", "searxng_url": searxng,
            "fable_nominatim_url": weather, "fable_open_meteo_url": weather,
            "smtp_port": smtp.sockets[0].getsockname()[1], "smtp_starttls": False,
            "fable_base_url": "http://127.0.0.1"})
        everything = await Fable.open(settings, migrate=False)
        try:
            report, status = await _schemathesis(everything, key, tmp_path)
        finally:
            await everything.close()
            smtp.close()
    assert status == 0, report[-20000:]


class Sink:
    async def handle_DATA(self, server: SMTP, session: object, envelope: object) -> str:  # noqa: N802  aiosmtpd's name
        return "250 OK"


async def _schemathesis(fable: Fable, key: str, tmp_path: Path) -> tuple[str, int | None]:
    async with serve(create_app(fable)) as url:
        run = await asyncio.create_subprocess_exec(
            SCHEMATHESIS, "run", f"{url}/api/openapi.json",
            "--header", f"Authorization: Bearer {key}",
            "--checks", os.environ.get("FUZZ_CHECKS", "not_a_server_error,response_schema_conformance"),
            "--seed", str(SEED), "--max-examples", str(EXAMPLES), "--workers", "1",
            "--phases", "examples,coverage,fuzzing", "--no-shrink", "--request-timeout", "20",
            "--report", "junit", "--report-dir", str(tmp_path),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, cwd=tmp_path,
        )
        out, _ = await asyncio.wait_for(run.communicate(), 600)
    return out.decode(errors="replace"), run.returncode
