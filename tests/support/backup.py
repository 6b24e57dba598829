"""Backup test helpers: emptying the database between steps, archives as bytes and as rows."""

from __future__ import annotations

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


