"""The ``fable`` command line run in a test, in-process: ``fable_web.cli.main`` in a worker
thread (it runs its own event loop and opens its own Fable from the environment), which
exercises the executable's code without paying ~1 s of imports per command."""

from __future__ import annotations

import asyncio

import pytest

from fable_web.cli import main

__all__ = ["fable_cli"]


async def fable_cli(*argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``fable ARGV`` in-process; return (exit status, stdout, stderr)."""
    capsys.readouterr()
    status = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return status, out, err
