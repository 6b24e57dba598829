"""The runner behind ``make bench`` (``python -m bench.run``): each bench in a process of its own,
repeated, its section written from its median run with the spread of every headline figure.

Which benches there are is :data:`bench.run.BENCHES`; the command line is described there.
``--repeat N`` runs each bench N times and writes the section of its median run (by its first
headline figure at the reference speed) followed by a table of every headline figure over the
N runs: median and min-max, raw and at the reference speed (``bench.harness.machine``).
``--quick`` passes each bench its :attr:`~bench.harness.bench.Bench.quick` options (a few
thousand notes, short runs): for checking that the benches and this runner work, never for
figures; it implies ``--no-write``. A bench that exits with
:data:`~bench.harness.bench.SKIPPED` is skipped in a run of every bench, a failure when named.
"""

from __future__ import annotations

import importlib
import json
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness.bench import SKIPPED, Bench
from bench.harness.machine import REFERENCE_MS
from bench.harness.report import write_section

__all__ = ["Plan", "bench_of", "main", "parse", "with_spread"]


@dataclass
class Plan:
    repeat: int = 1
    quick: bool = False
    write: bool = True
    names: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)


def parse(argv: list[str], benches: tuple[str, ...]) -> Plan:
    plan, rest = Plan(), list(argv)
    while rest and rest[0].startswith("--") and rest[0] in ("--repeat", "--quick", "--no-write"):
        option = rest.pop(0)
        if option == "--repeat":
            plan.repeat = int(rest.pop(0))
        elif option == "--quick":
            plan.quick, plan.write = True, False
        else:
            plan.write = False
    while rest and rest[0] in benches:
        plan.names.append(rest.pop(0))
    if rest and not plan.names:
        raise SystemExit(f"bench arguments {rest} need a bench name before them (one of {', '.join(benches)})")
    plan.extra = rest
    return plan


def main(benches: tuple[str, ...], argv: list[str] | None = None) -> int:
    plan = parse(sys.argv[1:] if argv is None else argv, benches)
    status = 0
    for name in plan.names or benches:
        print(f"== bench.{name}" + (f" ({plan.repeat} runs)" if plan.repeat > 1 else ""), file=sys.stderr, flush=True)
        code = run_bench(name, plan)
        if code == SKIPPED and not plan.names:
            print(f"== bench.{name} skipped (see above)", file=sys.stderr, flush=True)
            continue
        status = status or code
    return status


def run_bench(name: str, plan: Plan) -> int:
    args = [*(_quick_args(name) if plan.quick else []), *plan.extra]
    if plan.repeat == 1:
        return _run(name, [*args, *([] if plan.write else ["--no-write"])])
    results = []
    with tempfile.TemporaryDirectory(prefix="fable-bench-run-") as tmp:
        for i in range(plan.repeat):
            print(f"== bench.{name}: run {i + 1} of {plan.repeat}", file=sys.stderr, flush=True)
            path = Path(tmp) / f"{i}.json"
            code = _run(name, [*args, "--no-write", "--result-json", str(path)])
            if code != 0:
                return code
            results.append(json.loads(path.read_text()))
    markdown = with_spread(results)
    print(f"\n{markdown}")
    if plan.write:
        write_section(results[0].get("bench", name), markdown)  # a bench may name its section by its arguments
    return 0


def _run(name: str, args: list[str]) -> int:
    return subprocess.run([sys.executable, "-m", f"bench.{name}", *args], check=False).returncode


def bench_of(name: str) -> Bench[Any, Any]:
    """The :class:`Bench` that module ``bench.NAME`` declares."""
    found: Bench[Any, Any] = importlib.import_module(f"bench.{name}").BENCH
    return found


def _quick_args(name: str) -> list[str]:
    return bench_of(name).quick_argv()


def with_spread(results: list[dict[str, Any]]) -> str:
    """The median run's section, then every headline figure over all the runs."""
    def first(result: dict[str, Any]) -> float:
        return float(result["figures"][0]["normalised"]) if result["figures"] else 0.0

    order = sorted(range(len(results)), key=lambda i: first(results[i]))
    median = order[(len(order) - 1) // 2]
    lead = results[median]["figures"][0]["name"] if results[median]["figures"] else "none"
    lines = [
        results[median]["markdown"].strip(), "",
        (f"Spread over {len(results)} runs (`python -m bench.run --repeat {len(results)}`); the tables above "
         f"are from run {median + 1}, the median by {lead} at the reference speed. Each cell: median, then "
         f"min-max; \"at reference\" is normalised to a reference workload of {REFERENCE_MS:.0f} ms."),
        "",
        "| Figure | Raw | Raw min-max | At reference | At reference min-max |",
        "|---|---:|---:|---:|---:|",
        _spread_row("reference workload, ms", [r["machine"]["reference"] for r in results], None),
    ]
    for k, figure in enumerate(results[0]["figures"]):
        raw = [r["figures"][k]["value"] for r in results]
        normalised = [r["figures"][k]["normalised"] for r in results] if figure["kind"] != "other" else None
        lines.append(_spread_row(f"{figure['name']}, {figure['unit']}", raw, normalised))
    return "\n".join(lines)


def _spread_row(label: str, raw: list[float], normalised: list[float] | None) -> str:
    cells = [label, *_pair(raw), *(_pair(normalised) if normalised is not None else ["", ""])]
    return "| " + " | ".join(cells) + " |"


def _pair(values: list[float]) -> list[str]:
    return [_num(statistics.median(values)), f"{_num(min(values))}-{_num(max(values))}"]


def _num(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2f}"
