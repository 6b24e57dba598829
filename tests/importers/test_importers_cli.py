"""A vault folder on the server's disk through the CLI: ``--input FOLDER`` sends it as a ZIP."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from fable_core.tools.caller import Caller
from fable_web.cli import main


async def test_a_vault_folder_is_imported_from_the_command_line(
        database_url: str, alice: Caller, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    for name, value in {"DATABASE_URL": database_url, "FABLE_DATA_DIR": str(data), "LLM_PROVIDER": "none"}.items():
        monkeypatch.setenv(name, value)
    vault = tmp_path / "vault"
    (vault / "Projects").mkdir(parents=True)
    (vault / "Projects" / "Roof.md").write_text("Fix the [[Gutter]] #house")
    (vault / "Gutter.md").write_text("---\ntags: outside\n---\nclean it")
    capsys.readouterr()
    status = await asyncio.to_thread(main, ["call", "import_vault", '{"dry_run": false}', "--input", str(vault),
                                            "--user", "alice"])
    out, err = capsys.readouterr()
    assert status == 0, err
    report = json.loads(out)
    assert report["created"] == 2
    assert {line["item"] for line in report["created_items"]} == {"Projects/Roof.md", "Gutter.md"}
