# Two commands on a fresh machine with Python 3.11+:
#   make serve   set up .venv, apply migrations, run Fable on the embedded PostgreSQL
#   make test    set up .venv with the dev extras and the test tools, run make check and the whole suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# caldav's HTTP library (niquests) brings urllib3-future, whose wheel overwrites urllib3 in place
# (requests, schemathesis then run on the fork): built from source with this set, it installs
# beside urllib3 as urllib3_future, which niquests then uses (docs/caldav.md)
PIP    := URLLIB3_NO_OVERRIDE=1 PIP_NO_BINARY=urllib3-future $(BIN)/pip
STAMP  := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: serve test test-system-postgres screenshots check install install-dev test-tools bench lint clean

serve: install
	$(BIN)/fable db upgrade
	$(BIN)/fable serve

# The suite on two worker processes (pytest-xdist), one per core, each with its own embedded
# PostgreSQL and session fixtures; tests go to whichever worker is free. TEST_WORKERS=0 runs it in
# this process, as a bare `pytest` does.
TEST_WORKERS ?= 2
test: install-dev check test-tools
	$(BIN)/python -m pytest -n $(TEST_WORKERS)
	$(MAKE) test-system-postgres

# The database tests again, on the distribution's PostgreSQL with pgvector (the external-database
# path; scripts/install-system-postgres installs it): a throwaway cluster for this run only.
SYSTEM_POSTGRES_TESTS := tests/core/knowledge/test_notes.py tests/core/knowledge/test_listing.py tests/core/test_migrations.py tests/assistant/test_semantic.py \
	tests/assistant/test_vector_dims.py tests/assistant/retrieval
test-system-postgres: install-dev
	./scripts/system-postgres $(BIN)/python -m pytest -n $(TEST_WORKERS) -p no:cacheprovider $(SYSTEM_POSTGRES_TESTS)

# The screenshots the README and docs/ show, taken again by the browser tests (a plain test run
# writes them to build/screenshots and leaves docs/ as it is).
screenshots: install-dev test-tools
	UPDATE_SCREENSHOTS=1 $(BIN)/python -m pytest -n $(TEST_WORKERS) -p no:cacheprovider tests/browser

# Static checks, before any test runs: ruff (make lint), mypy strict on every package, and the
# import contracts (surfaces above the core, knowledge apart from the assistant, no models in
# the surfaces). The rule sets and contracts are in pyproject.toml.
check: lint
	$(BIN)/mypy
	$(BIN)/lint-imports

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Fable needs Python 3.11+"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(PIP) install -q -e .
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(PIP) install -q -e ".[dev]"
	touch $@ $(STAMP)

install: $(STAMP)
install-dev: $(DEV_STAMP)

# Tools the suite drives: headless Chromium (browser tests) and the MCP conformance suite.
test-tools:
	./scripts/install-test-tools

# Every benchmark three times, writing docs/benchmarks.md (median run and spread); installs nothing
# outside .venv (bench.rest uses wrk if installed, else a Python load generator).
bench: install-dev
	$(BIN)/python -m bench.run --repeat 3

lint: install-dev
	$(BIN)/ruff check fable_core fable_mcp fable_web bench tests examples

clean:
	rm -rf $(VENV) .tools .pytest_cache .mypy_cache .ruff_cache .import_linter_cache .grimp_cache
