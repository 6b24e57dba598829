"""The floor: a trivial MCP server on the official SDK, its notes in a dict.

What a call costs with no work behind it: the SDK's framing, JSON-RPC, argument validation and
structured result, over the same transport, in a process of its own as Fable's is. ``bench.mcp``
runs it beside Fable in the same run, with the same client and calls, and gives Fable's figures
as multiples of its (a floor measured another day, or on another load, says nothing).

    python -m bench.harness.floor NOTES              # stdio
    python -m bench.harness.floor NOTES --http PORT  # streamable HTTP, 127.0.0.1:PORT/mcp

It starts with ``NOTES`` corpus notes (``bench.harness.corpus``, the seed Fable's bench loads).
Search is a scan for notes holding every word, newest first: fast enough at a few thousand.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from mcp.server.mcpserver import MCPServer

from bench.harness.corpus import Corpus

__all__ = ["floor_server"]


def floor_server(notes: int) -> MCPServer:
    server = MCPServer("floor", log_level="WARNING")
    store: dict[int, dict[str, Any]] = {}

    def add(title: str, body: str, tags: list[str]) -> dict[str, Any]:
        note_id = len(store) + 1
        store[note_id] = note = {"id": note_id, "title": title, "body": body, "tags": tags,
                                 "updated_at": datetime.now(UTC).isoformat()}
        return note

    corpus = Corpus(seed=11)
    for _ in range(notes):
        made = corpus.note().arguments()
        add(made["title"], made.get("body", ""), made.get("tags", []))

    @server.tool()
    def create_note(title: str, body: str = "", tags: list[str] | None = None) -> dict[str, Any]:
        """Create a note."""
        note = add(title, body, tags or [])
        return {"id": note["id"], "title": title, "updated_at": note["updated_at"]}

    @server.tool()
    def read_note(note_id: int) -> dict[str, Any]:
        """Read a note."""
        return store[note_id]

    @server.tool()
    def search_notes(query: str, limit: int = 10) -> dict[str, Any]:
        """Notes holding every word of the query, newest first."""
        words = query.lower().split()
        hits = []
        for note in reversed(store.values()):
            text = f"{note['title']} {note['body']}".lower()
            if all(w in text for w in words):
                hits.append({"id": note["id"], "title": note["title"], "snippet": note["body"][:160]})
                if len(hits) == limit:
                    break
        return {"items": hits}

    @server.tool()
    def list_notes(limit: int = 20) -> dict[str, Any]:
        """The newest notes."""
        newest = list(store.values())[-limit:][::-1]
        return {"items": [{"id": n["id"], "title": n["title"], "tags": n["tags"], "updated_at": n["updated_at"]}
                          for n in newest]}

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notes", type=int)
    parser.add_argument("--http", type=int, metavar="PORT")
    args = parser.parse_args()
    server = floor_server(args.notes)
    if args.http is None:
        server.run()
        return
    import uvicorn

    app = server.streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=args.http, log_level="warning", loop="uvloop", http="httptools",
                access_log=False)


if __name__ == "__main__":
    main()
