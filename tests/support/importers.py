"""Helpers the importer tests share (imported by name; ``conftest`` holds only fixtures)."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

import httpx

from fable_core.tools.caller import Caller

Rest = Callable[[Caller], AbstractAsyncContextManager[httpx.AsyncClient]]


def zipped(files: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content.encode() if isinstance(content, str) else content)
    return buffer.getvalue()
