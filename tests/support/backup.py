"""Backup test helpers: emptying the database between steps, archives as bytes and as rows."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from typing import Any

from sqlalchemy import text

from fable_core.db.models import Base
from fable_core.runtime import Fable
from fable_core.tools.binary import Blob
from fable_core.tools.caller import Caller

_RESTART = text("SELECT setval(format('%I.%I', schemaname, sequencename)::regclass, 1, false) FROM pg_sequences"
                " WHERE last_value IS NOT NULL AND schemaname = current_schema()")


async def empty(fable: Fable) -> None:
    """Every row gone, sequences restarted: a fresh instance."""
    await fable.dispatcher.usage.flush()
    async with fable.db.engine.begin() as conn:
        for table in reversed(Base.metadata.sorted_tables):
            await conn.execute(table.delete())
        await conn.execute(_RESTART)
    fable.keys.forget()


async def blob(fable: Fable, tool: str, caller: Caller, **arguments: Any) -> bytes:
    result = await fable.dispatcher.run(tool, arguments, caller)
    assert isinstance(result, Blob)
    return result.content


def members(archive: bytes) -> dict[str, list[list[Any]]]:
    """Each table's rows in an archive (columns first)."""
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        return {name: [entry["columns"], *(json.loads(line) for line in zf.read(entry["member"]).splitlines())]
                for name, entry in manifest["tables"].items()}


def with_table(archive: bytes, name: str, columns: list[str], rows: list[list[Any]]) -> bytes:
    """``archive`` with one more table member, its manifest entry checksummed as a real one."""
    content = b"".join(json.dumps(r).encode() + b"\n" for r in rows)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(archive)) as src, zipfile.ZipFile(out, "w") as dst:
        manifest = json.loads(src.read("manifest.json"))
        manifest["tables"][name] = {"member": f"tables/{name}.jsonl", "columns": columns, "rows": len(rows),
                                    "sha256": hashlib.sha256(content).hexdigest(), "bytes": len(content)}
        for info in src.infolist():
            if info.filename != "manifest.json":
                dst.writestr(info.filename, src.read(info.filename))
        dst.writestr(f"tables/{name}.jsonl", content)
        dst.writestr("manifest.json", json.dumps(manifest))
    return out.getvalue()


def with_rows(archive: bytes, name: str, change: Any) -> bytes:
    """``archive`` with table ``name``'s rows passed through ``change(columns, rows)``."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(archive)) as src, zipfile.ZipFile(out, "w") as dst:
        manifest = json.loads(src.read("manifest.json"))
        entry = manifest["tables"][name]
        rows = change(entry["columns"], [json.loads(line) for line in src.read(entry["member"]).splitlines()])
        content = b"".join(json.dumps(r).encode() + b"\n" for r in rows)
        entry.update(rows=len(rows), sha256=hashlib.sha256(content).hexdigest(), bytes=len(content))
        for info in src.infolist():
            if info.filename not in ("manifest.json", entry["member"]):
                dst.writestr(info.filename, src.read(info.filename))
        dst.writestr(entry["member"], content)
        dst.writestr("manifest.json", json.dumps(manifest))
    return out.getvalue()
