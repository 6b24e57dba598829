"""CLI starts: how long `fable --help` and `fable --version` take, and `fable mcp` until it answers
`initialize` on a new data directory and on an existing one.

    python -m bench.cli [--runs 5] [--no-write]

Each command is spawned as a desktop host or a shell does, from the installed `fable` script,
with no `DATABASE_URL` (the embedded PostgreSQL in the data directory) and `LLM_PROVIDER=none`:

- `fable --help` and `fable --version`: until the process exits (nothing is imported that the
  answer does not need);
- `fable mcp`, **new data directory**: a directory that does not exist yet, so the command
  creates the cluster (initdb), migrates it and makes the first user before it answers
  `initialize` (the MCP Inspector gives up after 15 s, desktop hosts after similar bounds);
- `fable mcp`, **existing data directory**: migrated, its PostgreSQL stopped, so the command
  starts it; then the first `tools/call` (`list_notes`), which needs the database.

Results go to the "cli" section of docs/benchmarks.md (issue 37's targets: `--help` < 0.5 s,
`initialize` < 2 s on an existing data directory and < 5 s on a new one).
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.harness.bench import Bench, Measured
from bench.harness.machine import Machine
from bench.harness.memory import PeakMemory
from bench.harness.options import option
from bench.harness.postgres import stop_postmaster
from bench.harness.report import Figure
from bench.harness.session import session
from bench.harness.starts import FABLE, Starts, fable_env, prepare_data_dir, time_mcp, time_one_mcp

__all__ = ["BENCH", "Options"]

EXISTING = "`fable mcp`, existing data directory (database stopped)"
NEW = "`fable mcp`, new data directory"
TARGETS = {"`fable --help`": 500.0, EXISTING: 2000.0, NEW: 5000.0}


@dataclass(frozen=True)
class Options:
    runs: int = option(5, "starts of each kind (the new data directory: at most 3)")


@dataclass
class Result:
    runs: int
    exits_ms: dict[str, list[float]] = field(default_factory=dict)  # --help, --version: until exit
    starts: Starts = field(default_factory=Starts)  # fable mcp: initialize, first call

    def p50(self, label: str) -> float:
        found = self.exits_ms.get(label) or self.starts.ready_ms.get(label) or [float("nan")]
        return statistics.median(found)


def _exit_ms(args: list[str], data_dir: Path) -> float:
    started = time.perf_counter()
    subprocess.run([str(FABLE), *args], env=fable_env(data_dir), check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - started) * 1000


async def _new_data_dir(root: Path, runs: int, starts: Starts) -> None:
    for n in range(runs):
        data_dir = root / f"new-{n}"  # not there: the command makes it
        try:
            await time_one_mcp(data_dir, [], NEW, starts)
        finally:
            stop_postmaster(data_dir / "pg")


def measure(options: Options) -> Measured[Result]:
    result = Result(options.runs)
    with tempfile.TemporaryDirectory(prefix="fable-bench-") as tmp, session(Path(tmp)) as bench:
        root = Path(tmp)
        for label, args in (("`fable --help`", ["--help"]), ("`fable --version`", ["--version"])):
            _exit_ms(args, root / "cli")  # the first spawn warms the disk cache, as a second use would
            result.exits_ms[label] = [_exit_ms(args, root / "cli") for _ in range(options.runs)]
        asyncio.run(_new_data_dir(root, min(3, options.runs), result.starts))
        existing = root / "existing"
        try:
            prepare_data_dir(existing, "bench")
            asyncio.run(time_mcp(existing, "bench", EXISTING, options.runs, result.starts, cold=True))
        finally:
            stop_postmaster(existing / "pg")
    return bench.measured(result)


def render(r: Result, machine: Machine, memory: PeakMemory) -> str:
    rows = []
    for label, runs in [*r.exits_ms.items(), *r.starts.ready_ms.items()]:
        first = r.starts.first_call_ms.get(label)
        rows.append(f"| {label} | {len(runs)} | {statistics.median(runs):,.0f} | "
                    f"{f'{statistics.median(first):,.0f}' if first else '-'} | "
                    f"{', '.join(f'{ms:,.0f}' for ms in runs)} |")
    checks = [f"| {label} | {r.p50(label):,.0f} ms | < {target:,.0f} ms | {'yes' if r.p50(label) < target else 'no'} |"
              for label, target in TARGETS.items()]
    return "\n".join([
        "## CLI starts (`python -m bench.cli`)",
        "",
        "Spawned as a host spawns them, from the installed `fable` script, on the embedded PostgreSQL "
        "(no `DATABASE_URL`), `LLM_PROVIDER=none`. `--help`, `--version`: until the process exits. "
        "`fable mcp`: until its `initialize` answer, and until its first `tools/call` (`list_notes`); on a "
        "new data directory it first creates the cluster, migrates it and makes the first user; on an "
        "existing one it starts the stopped PostgreSQL.",
        "",
        machine.describe(),
        "",
        "| Command | Runs | p50 ms | First call p50 ms | Each ms |",
        "|---|---:|---:|---:|---|",
        *rows,
        "",
        "| Target (issue 37) | Measured p50 | Goal | Met |",
        "|---|---|---|---|",
        *checks,
        "",
        memory.describe(),
    ])


def figures(r: Result) -> list[Figure]:
    return [Figure(f"{label} p50", r.p50(label), "ms", "time") for label in (*r.exits_ms, *r.starts.ready_ms)]


BENCH = Bench("cli", __doc__, Options, measure, render, figures, quick=Options(runs=1))


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
