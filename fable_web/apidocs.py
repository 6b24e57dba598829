"""The route table of ``docs/api.md``, generated from the registry (never written by hand).

    python -m fable_web.apidocs     rewrite the table between the ``<!-- routes -->`` markers

A test compares the file with :func:`routes_table`, so a tool that gains a route shows up in
the docs by running the command above.
"""

from __future__ import annotations

import re
from pathlib import Path

from fable_core.tools.registry import Registry

__all__ = ["API_MD", "routes_table", "write_routes_table"]

API_MD = Path(__file__).resolve().parents[1] / "docs" / "api.md"
START, END = "<!-- routes -->", "<!-- /routes -->"


_METHOD_ORDER = {"GET": 0, "POST": 1, "PUT": 2, "PATCH": 3, "DELETE": 4}


def routes_table(registry: Registry) -> str:
    """One row per routed tool, by path then method (import order must not matter)."""
    routed = sorted(
        (t for t in registry if t.route is not None),
        key=lambda t: (t.route.path, _METHOD_ORDER[t.route.method]),  # type: ignore[union-attr]
    )
    rows = ["| route | tool | scope | what it does |", "|---|---|---|---|"]
    for t in routed:
        assert t.route is not None
        summary = t.description.splitlines()[0]
        rows.append(f"| `{t.route.method} /api{t.route.path}` | `{t.name}` | {t.scope} | {summary} |")
    return "\n".join(rows)


def write_routes_table(registry: Registry, path: Path = API_MD) -> None:
    block = f"{START}\n{routes_table(registry)}\n{END}"
    text = path.read_text()
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.DOTALL)
    path.write_text(pattern.sub(lambda _: block, text) if pattern.search(text) else f"{text}\n{block}\n")


if __name__ == "__main__":
    from fable_core.capabilities import load_capabilities
    from fable_core.tools import REGISTRY

    load_capabilities()
    write_routes_table(REGISTRY)
