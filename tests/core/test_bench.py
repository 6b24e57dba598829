"""The benchmarks keep working as tools change: a tiny run of bench.core on the test database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.caldav_server import Radicale, radicale_server

from bench.core import render, run
from bench.harness.machine import record
from bench.harness.memory import PeakMemory
from bench.harness.report import write_section
from fable_core.config import Settings
from fable_core.runtime import Fable


@pytest.mark.heavy_loop(reason="the bench's harness writes its corpus and measures the machine (a busy wait) "
                               "in its own coroutine: that is the harness's work, not a request's")
async def test_core_bench_runs_end_to_end_on_a_small_corpus(settings: Settings) -> None:
    machine = record()
    result = await run(settings, notes=40, workers=3, processes=1, runs=4, batch=10, single_seconds=0.5)
    machine.finish()
    assert result.notes == 40 and result.requested == 40 and result.load_rate > 0
    assert result.single_notes > 0 and result.single_seconds > 0  # the one-call-per-note comparison ran
    assert [lat.name for lat in result.latencies] == [
        "create_note", "read_note", "list_notes", "search_notes",
        "read_note: bare SQL", "read_note: tool, no dispatcher", "read_note: dispatcher",
    ]
    assert all(lat.samples == 4 and 0 < lat.p50_ms <= lat.p99_ms for lat in result.latencies)
    markdown = render(result, machine, PeakMemory({}, 1.0))
    assert markdown.startswith("## Core / dispatcher") and "| search_notes p50 |" in markdown
    assert "one `create_note` call per note" in markdown


def test_write_section_replaces_its_own_section_and_keeps_the_others(tmp_path: Path) -> None:
    path = tmp_path / "benchmarks.md"
    write_section("core", "## Core\nfirst", path)
    write_section("rest", "## REST\nrest numbers", path)
    write_section("core", "## Core\nsecond", path)
    text = path.read_text()
    assert text.startswith("# Benchmarks")
    assert "second" in text and "first" not in text and "rest numbers" in text
    assert text.index("## Core") < text.index("## REST")


async def test_search_bench_runs_end_to_end_on_a_small_corpus(fable: Fable) -> None:
    from bench import search

    machine = record()
    result = await search.run(fable, [300], runs=2, million=False)
    machine.finish()
    [size] = result.sizes
    assert size.notes == 300 and len(size.classes) == 9 and all(len(s) == 2 for s in size.classes.values())
    assert size.quality is not None and size.quality.labelled_at_3 == 1.0 and size.quality.phrase_recall == 1.0
    markdown = search.render(result, machine, PeakMemory({}, 1.0))
    assert markdown.startswith("## Search") and "| **mixed** |" in markdown
    assert [f.name for f in search.figures(result)] == ["mixed p50 at 300", "mixed p95 at 300"]


async def test_sharing_bench_runs_end_to_end_on_a_small_world(fable: Fable) -> None:
    from bench import sharing

    machine = record()
    result = await sharing.run(fable, users=4, per_user=100, shares=60, runs=3)
    machine.finish()
    assert (result.users, result.notes) == (4, 400) and result.shares >= 40 and result.shared_projects == 3
    assert result.shared_notes > 0 and set(result.shared.calls) == {
        "list_notes", "search_notes", "read_note (own)", "read_note (shared)"}
    markdown = sharing.render(result, machine, PeakMemory({}, 1.0))
    assert markdown.startswith("## Sharing") and "| read_note (shared) |" in markdown
    assert len(sharing.figures(result)) == 5


async def test_journal_bench_runs_end_to_end_on_a_small_world(fable: Fable) -> None:
    from bench import journal

    machine = record()
    result = await journal.run(fable, notes=1200, runs=2)
    machine.finish()
    assert result.notes == 1200 and result.tasks_due > 0
    assert set(result.calls) == {"gather (every section)", "section tasks", "section projects", "section threads",
                                 "section events", "section weather", "section moments",
                                 "prepare_journal, no model"} and all(len(s) == 2 for s in result.calls.values())
    markdown = journal.render(result, machine, PeakMemory({}, 1.0))
    assert markdown.startswith("## Journal") and "| prep gather p50 at 1,200 notes, no model |" in markdown
    assert [f.name for f in journal.figures(result)] == ["gather p50 at 1,200 notes", "gather p95 at 1,200 notes"]


@pytest.fixture
def radicale(tmp_path: Path) -> Iterator[Radicale]:
    """Radicale started (and its calendars made) before the test's own phase: blocking work."""
    with radicale_server(tmp_path / "radicale") as server:
        yield server


async def test_caldav_bench_runs_end_to_end_against_radicale(fable: Fable, radicale: Radicale) -> None:
    from bench import caldav

    local = Fable(fable.settings.model_copy(update={"fable_caldav_allow_hosts": [radicale.host]}), fable.db)
    machine = record()
    result = await caldav.run(local, radicale, events=20, runs=3)
    machine.finish()
    assert (result.events, result.pulled_again, result.quiet.samples) == (20, 0, 3)
    markdown = caldav.render(result, machine, PeakMemory({}, 1.0))
    assert markdown.startswith("## CalDAV sync") and "| sync_calendar, nothing changed | 3 |" in markdown
    assert [f.name for f in caldav.figures(result)] == ["sync with no changes p50", "sync with no changes p99"]


async def test_calendar_bench_runs_end_to_end_on_a_small_calendar(fable: Fable) -> None:
    from bench import calendar

    machine = record()
    result = await calendar.run(fable, events=100, runs=3)
    machine.finish()
    assert (result.events, result.recurring) == (100, 4) and len(result.first_page) == 3
    assert len(result.whole_month) == len(result.occurrences) == 3 and min(result.occurrences) > 0
    markdown = calendar.render(result, machine, PeakMemory({}, 1.0))
    assert markdown.startswith("## Calendar") and "| month view list_events p50 |" in markdown
    assert calendar.figures(result)[0].name == "month view list_events p50"


def test_every_bench_declares_one_bench_whose_quick_options_round_trip() -> None:
    """What ``bench.run --quick`` passes a bench's process parses back to its quick options."""
    from bench.harness import options
    from bench.harness.bench import Bench
    from bench.harness.runner import bench_of
    from bench.run import BENCHES

    for name in BENCHES:
        bench = bench_of(name)
        assert isinstance(bench, Bench) and bench.name == name and bench.title, name
        parsed = bench.parser().parse_args([*bench.quick_argv(), "--no-write"])
        assert options.values(bench.options, parsed) == bench.quick, name


def test_bench_options_become_a_command_line_and_back() -> None:
    from dataclasses import dataclass

    from bench.harness.options import argv, option, parser, values

    @dataclass(frozen=True)
    class Options:
        notes_per_user: int = 100
        servers: list[int] = option([1, 2], "app processes")
        million: bool = option(False, "go big")
        database_url: str | None = option(None, "elsewhere")

    chosen = Options(notes_per_user=5, servers=[1], million=True)
    assert argv(chosen) == ["--notes-per-user", "5", "--servers", "1", "--million"]
    assert values(Options, parser(Options, "p", "d").parse_args(argv(chosen))) == chosen
    assert values(Options, parser(Options, "p", "d").parse_args([])) == Options()


def test_no_bench_edits_sys_path_or_imports_the_tests_fakes_by_bare_name() -> None:
    """The fakes are ``tests.support.*`` from the repository root; ``support.*`` only resolves
    inside pytest (``tests/`` on its path), so a bench importing it would not run alone."""
    root = Path(__file__).resolve().parents[2] / "bench"
    offenders = [str(path.relative_to(root)) for path in sorted(root.rglob("*.py"))
                 if "sys.path" in (text := path.read_text())
                 or any(line.lstrip().startswith(("from support.", "import support", "from helpers "))
                        for line in text.splitlines())]
    assert offenders == []
