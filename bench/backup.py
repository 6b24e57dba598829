"""Backup benchmark: an instance archive of one user with 100k notes, restored into an empty instance.

    python -m bench.backup [--notes 100000] [--no-write]

One fresh embedded PostgreSQL in a temporary directory. One user's notes are made by SQL
(``bench.harness.corpus``-sized Markdown bodies of ~600 bytes, a third of them tasks), one ``[[wikilink]]``
a note (to the note before it) and one earlier version in five. Timed: ``write_archive`` of the
whole instance (as ``backup_instance`` and ``fable backup`` run it), then, after every table is
emptied, ``read_archive`` (every checksum) and ``restore`` in one transaction (ids remapped,
links rewritten). Target: restore >= 2,000 notes/s. Results go to the "backup" section of
docs/benchmarks.md.
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text

from bench.core import _make_user
from bench.harness.bench import Bench
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.report import Figure
from bench.harness.session import on_one_fable
from fable_core.data.backup import archive
from fable_core.db.models import Base
from fable_core.runtime import Fable

__all__ = ["BENCH", "Options"]


@dataclass(frozen=True)
class Options:
    notes: int = 100_000


_BODY = ("Notes on the garden: the compost wants more brown matter, the beans climb the east fence. "
         "- [ ] turn the heap\n- [ ] order seeds\n") * 3


@dataclass
class Result:
    notes: int
    rows: int
    archive_bytes: int
    load_seconds: float
    backup_seconds: float
    verify_seconds: float
    restore_seconds: float

    @property
    def rate(self) -> float:
        return self.notes / (self.verify_seconds + self.restore_seconds)


async def _sql(fable: Fable, sql: str, **params: Any) -> None:
    async with fable.db.engine.begin() as conn:
        await conn.execute(text(sql), params)


async def run(fable: Fable, notes: int) -> Result:
    started = time.perf_counter()
    me = await _make_user(fable)
    await _sql(fable, """
        INSERT INTO notes (user_id, title, title_key, body, tags, status, version)
        SELECT :me, 'Note ' || g, 'note ' || g, :body || g, ARRAY['garden'],
               CASE WHEN g % 3 = 0 THEN 'todo' END, 1
        FROM generate_series(1, :n) g""", me=me.user_id, body=_BODY, n=notes)
    await _sql(fable, """
        INSERT INTO note_links (user_id, source_id, target_id, target_key, target_title)
        SELECT n.user_id, n.id, n.id - 1, 'note ' || (n.id - 1), 'Note ' || (n.id - 1)
        FROM notes n WHERE n.id > 1""")
    await _sql(fable, """
        INSERT INTO note_versions (note_id, user_id, version, title, body, tags)
        SELECT n.id, n.user_id, 0, n.title, n.body, n.tags FROM notes n WHERE n.id % 5 = 0""")
    load = time.perf_counter() - started

    out = io.BytesIO()
    t0 = time.perf_counter()
    async with fable.db.transaction() as session:
        counts = await archive.write_archive(session, out, scope="instance")
    backup = time.perf_counter() - t0

    async with fable.db.engine.begin() as conn:
        names = ", ".join(t.name for t in Base.metadata.sorted_tables)
        await conn.execute(text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
    t0 = time.perf_counter()
    zf, manifest = archive.read_archive(io.BytesIO(out.getvalue()))
    verify = time.perf_counter() - t0
    t0 = time.perf_counter()
    async with fable.db.transaction() as session:
        summary = await archive.restore(session, zf, manifest)
    restore = time.perf_counter() - t0
    assert summary["notes"] == notes, summary
    return Result(notes, sum(counts.values()), len(out.getvalue()), load, backup, verify, restore)


def figures(r: Result) -> list[Figure]:
    return [Figure(f"restore of {r.notes:,} notes", r.rate, "notes/s", "rate")]


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    met = machine.normalise(r.rate, "rate") >= 2000
    return "\n".join([
        "## Backup (`python -m bench.backup`)",
        "",
        (f"One user holding {r.notes:,} notes (~600-byte bodies, made by SQL in {r.load_seconds:.0f} s), one "
         f"wikilink a note and an earlier version in five: {r.rows:,} rows, a {r.archive_bytes / 1e6:.1f} MB "
         "archive. The instance backed up (`write_archive`, streamed from a cursor), every table emptied, then "
         "the archive verified (every checksum) and restored in one transaction (ids remapped, links rewritten)."),
        "",
        machine.describe(),
        "",
        "| Step | Seconds |",
        "|---|---:|",
        f"| backup (write the archive) | {r.backup_seconds:.1f} |",
        f"| verify (read every member, checksums) | {r.verify_seconds:.1f} |",
        f"| restore (one transaction) | {r.restore_seconds:.1f} |",
        "",
        memory.describe(),
        "",
        "| Target (judged at the reference speed) | Measured | Goal | Met |",
        "|---|---|---|---|",
        f"| restore of {r.notes:,} notes into an empty instance (verify + restore) | {r.rate:,.0f} notes/s | "
        f">= 2,000 notes/s | {'yes' if met else '**no**'} |",
    ])


BENCH = Bench("backup", __doc__, Options, lambda o: on_one_fable(lambda fable: run(fable, o.notes)), render, figures,
              quick=Options(notes=3000))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
