"""Write one bench's section of docs/benchmarks.md, leaving the other sections alone.

Each section sits between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->`` markers; a
section not yet in the file is appended.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["BENCHMARKS_MD", "write_section"]

BENCHMARKS_MD = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
_HEADER = "# Benchmarks\n\nMeasured by `make bench` (`python -m bench.run`); each section is rewritten by its bench.\n"


def write_section(name: str, markdown: str, path: Path = BENCHMARKS_MD) -> None:
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    block = f"{start}\n{markdown.strip()}\n{end}"
    text = path.read_text() if path.exists() else _HEADER
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(text):
        path.write_text(pattern.sub(lambda _: block, text))
    else:
        path.write_text(text.rstrip("\n") + "\n\n" + block + "\n")
