"""A research run from the command line: ``fable call research`` starts the run so that it
returns at once, follows it with follow_research (its progress on stderr) and exits when the
run has ended, instead of leaving it to die with the process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import fable_cli
from support.fake_llm import FakeLLM
from support.outside import TIMEOUT
from support.research import QUESTION, script_run, serve_pages
from support.searxng import FakeSearxng
from support.web_site import FakeSite

from fable_core.tools.caller import Caller


async def test_the_cli_follows_a_run_to_its_end_and_prints_it(
        database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        alice: Caller, llm: FakeLLM, outside_llm_url: str, searxng: FakeSearxng, searxng_url: str,
        site: FakeSite, site_url: str) -> None:
    for name, value in {"DATABASE_URL": database_url, "FABLE_DATA_DIR": str(tmp_path), "LLM_PROVIDER": "ollama",
                        "OLLAMA_URL": outside_llm_url, "EMBED_MODEL": "fake-embed", "SEARXNG_URL": searxng_url,
                        "FABLE_SEARXNG_TIMEOUT": str(TIMEOUT),
                        "FABLE_FETCH_ALLOW_HOSTS": site_url.removeprefix("http://")}.items():
        monkeypatch.setenv(name, value)
    serve_pages(site, searxng, site_url, n=2)
    script_run(llm)
    status, out, err = await fable_cli("call", "research", json.dumps({"question": QUESTION}), "--user", "alice",
                                       capsys=capsys)
    assert status == 0, err
    run = json.loads(out)
    assert run["status"] == "done" and run["question"] == QUESTION and len(run["notes"]) == 3
    assert ("waiting for the work research started (fable call follow_research '{\"run_id\": 1}' follows it too); "
            "Ctrl-C stops it") in err
    kinds = [line.split(":")[0] for line in err.splitlines()[1:]]
    assert kinds[0] == "queries" and "outline" in kinds and kinds[-1] == "done"
