"""Bytes on the command line: ``--input FILE`` fills a tool's binary argument, a binary result
goes to ``--output FILE``; a tool without one refuses ``--input``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.images import png

from fable_core.tools.caller import Caller
from fable_web.cli import main


async def test_upload_from_a_file_and_get_into_a_file(database_url: str, tmp_path: Path, alice: Caller,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    for name, value in {"DATABASE_URL": database_url, "FABLE_DATA_DIR": str(tmp_path), "LLM_PROVIDER": "none"}.items():
        monkeypatch.setenv(name, value)
    picture = tmp_path / "in.png"
    picture.write_bytes(png(10, 200, 10))

    async def fable(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        status = await asyncio.to_thread(main, list(argv))
        out, err = capsys.readouterr()
        return status, out, err

    status, out, _ = await fable("call", "upload_image", '{"alt": "green"}', "--input", str(picture), "--user", "alice")
    saved = json.loads(out)
    assert status == 0 and saved["content_type"] == "image/png" and saved["markdown"].startswith("![green](")
    status, out, _ = await fable("call", "get_image", json.dumps({"image_id": saved["id"]}),
                                 "--output", str(tmp_path / "out.png"), "--user", "alice")
    assert status == 0 and json.loads(out)["content_type"] == "image/png"
    assert (tmp_path / "out.png").read_bytes() == picture.read_bytes()
    status, _, err = await fable("call", "list_notes", "{}", "--input", str(picture), "--user", "alice")
    assert status == 1 and "takes no binary argument" in err
