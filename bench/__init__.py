"""Benchmarks: ``python -m bench.run`` runs every one; results go to docs/benchmarks.md."""
