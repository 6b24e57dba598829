"""A Fable-like process for the embedded-server tests: it joins the server and waits.

Run as ``python tests/core/embedded_child.py PG_DIR [VALUE]``. It starts (or joins) the embedded
server in PG_DIR, appends VALUE (if given) to a ``marker`` table, prints one JSON line
(``pid``, ``postmaster``, ``values``, ``settings``: what ``SHOW`` says of ``SERVER_SETTINGS``) and
then runs one query per line read from stdin, answering ``ok``; at EOF it exits normally, so the
embedded module's exit handling runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import asyncpg

from fable_core.db.embedded import SERVER_SETTINGS, start_embedded


async def _values(url: str, value: str | None) -> tuple[list[str], dict[str, str]]:
    socket_dir = url.split("host=", 1)[1]
    conn = await asyncpg.connect(host=socket_dir, user="postgres", database="fable")
    try:
        await conn.execute("CREATE TABLE IF NOT EXISTS marker (v text)")
        if value is not None:
            await conn.execute("INSERT INTO marker VALUES ($1)", value)
        settings = {name: await conn.fetchval(f"SHOW {name}") for name in SERVER_SETTINGS}
        return [r["v"] for r in await conn.fetch("SELECT v FROM marker ORDER BY v")], settings
    finally:
        await conn.close()


def main() -> None:
    pg_dir = Path(sys.argv[1])
    value = sys.argv[2] if len(sys.argv) > 2 else None
    url = start_embedded(pg_dir)
    postmaster = int((pg_dir / "postmaster.pid").read_text().splitlines()[0])
    values, settings = asyncio.run(_values(url, value))
    print(json.dumps({"pid": os.getpid(), "postmaster": postmaster, "values": values, "settings": settings}),
          flush=True)
    for _ in sys.stdin:
        asyncio.run(_values(url, None))
        print("ok", flush=True)


if __name__ == "__main__":
    main()
