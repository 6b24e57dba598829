"""A bench's output: its section of docs/benchmarks.md and its headline figures.

Each section sits between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->`` markers; a
section not yet in the file is appended. :func:`publish` prints the section, writes it (unless
``--no-write``) and, with the hidden ``--result-json PATH`` that ``bench.run --repeat`` passes,
saves the section and the headline :class:`Figure` values (raw and at the reference speed) for
the runner to compare runs on.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.harness.machine import Kind, Machine

__all__ = ["BENCHMARKS_MD", "Figure", "publish", "write_section"]

BENCHMARKS_MD = Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md"
_HEADER = "# Benchmarks\n\nMeasured by `make bench` (`python -m bench.run`); each section is rewritten by its bench.\n"


@dataclass(frozen=True)
class Figure:
    """A headline figure: ``kind`` says how it scales with the machine (``bench.harness.machine``)."""

    name: str
    value: float
    unit: str
    kind: Kind = "other"


def publish(name: str, markdown: str, figures: list[Figure], machine: Machine, *, write: bool = True,
            result_json: Path | None = None) -> None:
    """Print the section, write it unless ``write`` is false, and save it for the runner."""
    print(markdown, flush=True)
    if write:
        write_section(name, markdown)
    if result_json is not None:
        result_json.write_text(json.dumps({
            "bench": name, "markdown": markdown, "machine": machine.as_json(),
            "figures": [{**asdict(f), "normalised": machine.normalise(f.value, f.kind)} for f in figures],
        }))


def write_section(name: str, markdown: str, path: Path = BENCHMARKS_MD) -> None:
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    block = f"{start}\n{markdown.strip()}\n{end}"
    text = path.read_text() if path.exists() else _HEADER
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(text):
        path.write_text(pattern.sub(lambda _: block, text))
    else:
        path.write_text(text.rstrip("\n") + "\n\n" + block + "\n")
