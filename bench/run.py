"""``make bench``: run every benchmark that exists, one after another, each writing its section.

A bench is a module ``bench.<name>`` with ``main(argv) -> int``. Extra arguments are passed
to each only when given as ``python -m bench.run NAME [ARGS...]`` for one bench.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable

__all__ = ["BENCHES", "main"]

BENCHES = ("core", "mcp", "rest", "assistant", "tokens", "smallmodel")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in BENCHES:
        return _main_of(argv[0])(argv[1:])
    status = 0
    for name in BENCHES:
        if importlib.util.find_spec(f"bench.{name}") is None:
            continue
        print(f"== bench.{name}", file=sys.stderr, flush=True)
        status |= _main_of(name)([])
    return status


def _main_of(bench: str) -> Callable[[list[str]], int]:
    bench_main: Callable[[list[str]], int] = importlib.import_module(f"bench.{bench}").main
    return bench_main


if __name__ == "__main__":
    raise SystemExit(main())
