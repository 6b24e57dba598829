"""Importer benchmark: an Obsidian vault of 10,000 notes, from its ZIP to stored notes.

    python -m bench.importers [--notes 10000] [--no-write]

One fresh embedded PostgreSQL. The vault is made in memory (``bench.harness.corpus``: Markdown bodies
with ``[[links]]`` among the notes, headings, lists and code), in 20 folders, each note with
front matter (tags, a creation date, one in ten an alias) and an inline ``#tag``; it is zipped
once. Timed through the dispatcher (``import_vault``): the dry run (reading the ZIP, parsing,
rewriting links, the duplicate checks: everything but the writes), the import (the same and
every note, version, link, word and provenance row, one transaction), and a rerun (every file
skipped as imported before). Target (issue 16): the import ≥ 1,000 notes/s at the reference
speed. Results go to the "importers" section of docs/benchmarks.md.
"""

from __future__ import annotations

import io
import time
import zipfile
from dataclasses import dataclass

from bench.core import _make_user
from bench.harness.bench import Bench
from bench.harness.corpus import Corpus
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.report import Figure
from bench.harness.session import on_one_fable
from fable_core.runtime import Fable

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    notes: int = 10_000


TARGET_RATE = 1000.0
FOLDERS = 20


@dataclass
class Result:
    notes: int
    zip_bytes: int
    dry_s: float
    import_s: float
    rerun_s: float
    created: int

    @property
    def rate(self) -> float:
        return self.created / self.import_s


def vault(notes: int) -> bytes:
    corpus = Corpus(seed=16)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for n, spec in enumerate(corpus.notes(notes)):
            alias = f"aliases: [{spec.title.split()[0]} {n}]\n" if n % 10 == 0 else ""
            tags = ", ".join(spec.tags)
            front = f"---\ntags: [{tags}]\n{alias}created: 2024-{n % 12 + 1:02d}-{n % 28 + 1:02d}\n---\n"
            archive.writestr(f"Vault/Folder {n % FOLDERS}/{spec.title}.md", f"{front}{spec.body}\n\n#imported\n")
    return buffer.getvalue()


async def run(fable: Fable, notes: int) -> Result:
    me = await _make_user(fable)
    content = vault(notes)
    started = time.perf_counter()
    dry = await fable.call("import_vault", {"content": content}, me)
    dry_s = time.perf_counter() - started
    started = time.perf_counter()
    done = await fable.call("import_vault", {"content": content, "dry_run": False}, me)
    import_s = time.perf_counter() - started
    started = time.perf_counter()
    again = await fable.call("import_vault", {"content": content, "dry_run": False}, me)
    rerun_s = time.perf_counter() - started
    assert dry["created"] == done["created"] and again["created"] == 0, (dry["created"], done["created"])
    return Result(notes, len(content), dry_s, import_s, rerun_s, done["created"])


def figures(r: Result) -> list[Figure]:
    return [Figure(f"vault import of {r.notes:,} notes", r.rate, "notes/s", "rate"),
            Figure(f"vault import of {r.notes:,} notes, time", r.import_s * 1000, "ms", "time")]


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    met = machine.normalise(r.rate, "rate") >= TARGET_RATE
    return "\n".join([
        "## Importers",
        "",
        (f"`python -m bench.importers --notes {r.notes}`: an Obsidian vault of {r.notes:,} Markdown notes in "
         f"{FOLDERS} folders (front matter with tags, a date and one in ten an alias; links among the notes; an "
         f"inline tag), a {r.zip_bytes / 1e6:.1f} MB ZIP, through the dispatcher (`import_vault`). "
         f"{r.created:,} notes created (the corpus repeats a few titles: those are skipped as duplicates). "
         "Figures in ms, rates in notes/s."),
        "",
        machine.describe(),
        "",
        "| Call | Time | Notes/s |",
        "|---|---:|---:|",
        f"| dry run (read, parse, rewrite links, duplicate checks) | {machine.ms(r.dry_s * 1000)} ms | "
        f"{machine.rate(r.notes / r.dry_s)} |",
        f"| import (one transaction) | {machine.ms(r.import_s * 1000)} ms | {machine.rate(r.rate)} |",
        f"| rerun (every file imported before) | {machine.ms(r.rerun_s * 1000)} ms | "
        f"{machine.rate(r.notes / r.rerun_s)} |",
        "",
        memory.describe(),
        "",
        "| Target (judged at the reference speed) | Measured | Goal | Met |",
        "|---|---|---|---|",
        f"| vault import of {r.notes:,} notes | {machine.rate(r.rate)} notes/s | ≥ {TARGET_RATE:,.0f} notes/s | "
        f"{'yes' if met else '**no**'} |",
    ])


BENCH = Bench("importers", __doc__, Options, lambda o: on_one_fable(lambda fable: run(fable, o.notes)), render,
              figures, quick=Options(notes=1000))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
