"""``make bench``: run the benchmarks, each in a process of its own, each writing its section.

    python -m bench.run [--repeat N] [--quick] [--no-write] [NAME ...] [BENCH ARGS ...]

With no NAME, every bench in :data:`BENCHES` runs, one after another, in this order. Arguments
after the names go to each named bench (``python -m bench.run core --notes 20000``).
``--repeat N`` writes each section from the median of N runs, with the spread of its headline
figures (``make bench`` runs ``--repeat 3``); ``--quick`` runs each bench on its small options,
writing nothing. The machinery is :mod:`bench.harness.runner`.
"""

from __future__ import annotations

from bench.harness.runner import main as _main

__all__ = ["BENCHES", "main"]

BENCHES = ("core", "imports", "search", "sharing", "journal", "calendar", "caldav", "structured", "feeds", "images",
           "mcp", "mcp_profile", "rest", "assistant", "retrieval", "tokens", "smallmodel", "smalleval",
           "research", "backup",
           "importers", "logs", "export", "markdown", "drafts", "projchat", "ui_pages", "ui_browse", "ui", "oauth",
           "tasks", "replicas", "readrep", "generations", "replica_throughput", "shed", "faults", "cli")


def main(argv: list[str] | None = None) -> int:
    return _main(BENCHES, argv)


if __name__ == "__main__":
    raise SystemExit(main())
