"""Client configurations: what an MCP host is given to reach this Fable, ready to paste.

A stdio host (Claude Desktop) starts ``command`` with ``args``, in an environment of its own
with ``env`` on top: not the shell's, so neither the virtualenv nor its ``bin`` is on its
``PATH``, and nothing the shell exported reaches the server. So a stdio configuration names
the absolute path of the ``fable`` executable of this installation and carries, in ``env``,
what the server needs to find the same data. ``tests/mcp/test_client_configs.py`` starts every
configuration generated here the way such a host does.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fable_core.config import Settings

__all__ = ["fable_command", "http_config", "local_env", "stdio_config"]


def fable_command() -> str:
    """The absolute path of this installation's ``fable`` (beside the running Python, as pip
    installs console scripts), else the one on ``PATH``, else plain ``fable``."""
    beside = Path(sys.executable).with_name("fable.exe" if sys.platform == "win32" else "fable")
    if beside.is_file():
        return str(beside)
    found = shutil.which("fable")
    return str(Path(found).resolve()) if found else "fable"


def stdio_config(args: Sequence[str], env: Mapping[str, str] | None = None, name: str = "fable") -> dict[str, Any]:
    """``{"mcpServers": {name: {"command", "args", "env"}}}`` that runs ``fable ARGS``."""
    server: dict[str, Any] = {"command": fable_command(), "args": list(args)}
    if env:
        server["env"] = dict(env)
    return {"mcpServers": {name: server}}


def http_config(url: str, key: str, name: str = "fable") -> dict[str, Any]:
    """The configuration of a client that speaks streamable HTTP to ``url`` with ``key``."""
    return {"mcpServers": {name: {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {key}"}}}}


def local_env(settings: Settings, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """What a local ``fable mcp`` started by a host needs to use the same data as this shell:
    the data directory (absolute: the host starts it elsewhere, with another ``HOME`` maybe), and
    every Fable setting exported here (``DATABASE_URL``, ``LLM_PROVIDER``, ... and their
    ``*_FILE`` forms)."""
    names = {name.upper() for name in Settings.model_fields}
    env = {k: v for k, v in environ.items() if k in names and v}
    env |= {k: str(Path(v).resolve()) for k, v in environ.items()  # a path relative to here means nothing there
            if k.endswith("_FILE") and k.removesuffix("_FILE") in names and v}
    return env | {"FABLE_DATA_DIR": str(settings.fable_data_dir.resolve())}
