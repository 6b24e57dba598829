"""The image: what the Dockerfile builds its wheel from is what the app needs at run time, and
the Dockerfile keeps the promises docs/deployment.md makes (multi-stage, no compiler or pip in
the runtime stage, a non-root user, a health check, SIGTERM, port 8000). No Docker engine runs
here: the wheel is built as the Dockerfile's build stage builds it, from the files it copies."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

import pytest
from support.pace import scaled
from support.stack import ROOT

PACKAGES = ("fable_core", "fable_mcp", "fable_web")


def _stages() -> list[list[str]]:
    """The Dockerfile's instructions (continuation lines joined), one list per stage."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    stages: list[list[str]] = []
    for line in (line.strip() for line in text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("FROM "):
            stages.append([])
        stages[-1].append(line)
    return stages


def _copied() -> list[str]:
    """The build context paths the build stage copies."""
    return [part for line in _stages()[0] if line.startswith("COPY ") for part in line.split()[1:-1]]


def _tracked(*paths: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", "--", *paths], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.split()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The wheel, built as the Dockerfile does (``pip wheel --no-deps``, in an isolated build
    environment) from a context holding the checkout's files the Dockerfile copies."""
    context = tmp_path_factory.mktemp("context")
    for name in _tracked(*_copied()):
        (context / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, context / name)
    out = context / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--wheel-dir", str(out), str(context)],
                   check=True, capture_output=True, timeout=300)
    (built,) = out.glob("fable-*.whl")
    return zipfile.ZipFile(built)


@pytest.mark.slow
def test_the_wheel_holds_every_file_of_the_packages_and_nothing_else(wheel: zipfile.ZipFile) -> None:
    files = {name for name in wheel.namelist() if ".dist-info/" not in name}
    tracked = set(_tracked(*PACKAGES))
    assert files == tracked
    # what is read as files at run time, not imported: a missing one only shows when it is used
    for needed in ("fable_core/py.typed", "fable_core/db/alembic/env.py", "fable_core/db/alembic/script.py.mako",
                   "fable_web/static/index.html"):
        assert needed in files
    assert any(name.startswith("fable_core/db/alembic/versions/") for name in files)
    assert any(name.startswith("fable_web/static/vendor/") for name in files)
    entry_points = next(name for name in wheel.namelist() if name.endswith(".dist-info/entry_points.txt"))
    assert "fable = " in wheel.read(entry_points).decode()


def test_the_build_context_is_what_the_dockerfile_copies() -> None:
    rules = [line for line in (ROOT / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    assert rules[0] == "*"  # everything out, then only these back in
    kept = [rule[1:].rstrip("/") for rule in rules if rule.startswith("!")]
    assert sorted(kept) == sorted(_copied())
    assert {"**/__pycache__", "**/*.pyc"} <= set(rules)  # what a checkout that ran has inside the packages


def test_hadolint_finds_nothing_in_the_dockerfile() -> None:
    hadolint = ROOT / ".tools/hadolint/bin/hadolint"
    if not hadolint.exists():
        pytest.fail(f"{hadolint} is missing: run scripts/install-test-tools")
    linted = subprocess.run([str(hadolint), "--no-color", "Dockerfile"], cwd=ROOT, capture_output=True, text=True,
                            timeout=scaled(60), check=False)
    assert (linted.returncode, linted.stdout) == (0, "")


def test_the_runtime_stage_is_small_unprivileged_and_supervised() -> None:
    build, runtime = _stages()
    assert build[0].endswith(" AS build") and runtime[0].startswith("FROM python:3.12-slim")
    assert any("pip wheel --no-deps" in line for line in build)
    assert any("URLLIB3_NO_OVERRIDE=1 PIP_NO_BINARY=urllib3-future" in line for line in build)  # see the Makefile
    copies = [line for line in runtime if line.startswith("COPY ")]
    assert copies == ["COPY --from=build /opt/fable /opt/fable"]  # the venv alone: no source, no wheel
    assert not any(word in line for line in runtime for word in ("apt-get", "gcc", "build-essential", "pip install"))
    user = next(line for line in runtime if line.startswith("USER "))
    assert user.split()[1].split(":")[0] not in ("root", "0")
    assert any(line.startswith("HEALTHCHECK ") and "/api/health" in line for line in runtime)
    assert "STOPSIGNAL SIGTERM" in runtime and "EXPOSE 8000" in runtime
    assert runtime[-1].startswith('CMD ["fable", "serve", "--host", "0.0.0.0", "--port", "8000"')
