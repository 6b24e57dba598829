"""What a benchmark is: one :class:`Bench` a bench module declares, and the one :func:`main` that runs it.

A bench module holds its measurement code and, at its end::

    BENCH = Bench("tasks", __doc__, Options, measure, render, figures, quick=Options(notes=2000, runs=10))

    if __name__ == "__main__":
        raise SystemExit(BENCH.main())

``python -m bench.tasks --notes 5000`` then parses the options (:mod:`bench.harness.options`),
runs ``measure`` (a fresh embedded PostgreSQL, the machine and memory recorded:
:mod:`bench.harness.session`), renders the section and writes it (:mod:`bench.harness.report`).
``python -m bench.run --quick`` passes each bench its ``quick`` options. A bench whose tool is
not installed here raises :class:`Unavailable` from ``measure``: its process exits with
:data:`SKIPPED`, which the runner skips in a run of every bench and fails when it is named.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from bench.harness import options as _options
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.report import Figure, publish

__all__ = ["SKIPPED", "Bench", "Measured", "Unavailable"]

OptionsT = TypeVar("OptionsT")  # the bench's options: a dataclass
ResultT = TypeVar("ResultT")  # what its measure returns

SKIPPED = 3  # exit status of a bench that cannot run on this machine


class Unavailable(Exception):
    """Raised by a bench's ``measure`` when a tool it measures is not installed; the message
    says how to install it."""


@dataclass(frozen=True)
class Measured(Generic[ResultT]):
    """A bench's result and the machine and memory it was measured on."""

    result: ResultT
    machine: Machine
    memory: PeakMemory = field(default_factory=lambda: PeakMemory({}))


@dataclass(frozen=True)
class Bench(Generic[OptionsT, ResultT]):
    """One benchmark: how to run it, its quick mode, and how its result becomes its section.

    ``name`` is the module (``bench.NAME``) and its section of docs/benchmarks.md unless
    ``section`` names the section from the options; ``doc`` is the module docstring (its first
    paragraph is the command's description); ``quick`` are the small options the test suite
    and ``bench.run --quick`` use: for checking the bench works, never for figures.
    """

    name: str
    doc: str | None
    options: type[OptionsT]
    measure: Callable[[OptionsT], Measured[ResultT]]
    render: Callable[[ResultT, Machine, PeakMemory], str]
    figures: Callable[[ResultT], list[Figure]]
    quick: OptionsT
    section: Callable[[OptionsT], str] | None = None

    def __post_init__(self) -> None:
        self.parser()  # refuses an option type a command line cannot carry, at import time

    @property
    def title(self) -> str:
        return (self.doc or self.name).split("\n\n")[0].strip()

    def parser(self) -> argparse.ArgumentParser:
        """The bench's options, then ``--no-write`` and the runner's hidden ``--result-json``."""
        p = _options.parser(self.options, f"python -m bench.{self.name}", self.title)
        p.add_argument("--no-write", action="store_true", help="print, do not update docs/benchmarks.md")
        p.add_argument("--result-json", type=Path, help=argparse.SUPPRESS)
        return p

    def quick_argv(self) -> list[str]:
        return _options.argv(self.quick)

    def main(self, argv: list[str] | None = None) -> int:
        """Parse the command line, measure, print the section and write it (unless ``--no-write``)."""
        args = self.parser().parse_args(argv)
        chosen = _options.values(self.options, args)
        os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
        try:
            measured = self.measure(chosen)
        except Unavailable as e:
            print(f"bench.{self.name}: skipped: {e}", file=sys.stderr, flush=True)
            return SKIPPED
        section = self.section(chosen) if self.section is not None else self.name
        markdown = self.render(measured.result, measured.machine, measured.memory)
        publish(section, markdown, self.figures(measured.result), measured.machine,
                write=not args.no_write, result_json=args.result_json)
        return 0

