"""Packaging: Fable works installed, outside the source tree.

The wheel is built from what the Dockerfile copies (pyproject.toml, README.md, the three
packages), installed non-editable into a temporary directory and run from another one, so
nothing can come from the checkout: the migrations must ship inside ``fable_core``. A second
test holds the rule that every third-party module the packages import is a declared dependency.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from support.pace import scaled

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("fable_core", "fable_mcp", "fable_web")
MIGRATIONS = "fable_core/db/alembic"
SOURCE_VERSIONS = sorted(p.name for p in (ROOT / MIGRATIONS / "versions").glob("*.py"))

_PROBE = """
import json, fable_core
from fable_core.db.migrations import ALEMBIC_DIR
versions = sorted(p.name for p in (ALEMBIC_DIR / "versions").glob("*.py"))
print(json.dumps({"package": fable_core.__file__, "alembic_dir": str(ALEMBIC_DIR),
                  "env_py": (ALEMBIC_DIR / "env.py").is_file(), "versions": versions}))
"""
_UPGRADE = "from fable_web.cli import main; raise SystemExit(main(['db', 'upgrade']))"


def run(*argv: str, **options: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=scaled(120), check=False, **options)
    assert done.returncode == 0, done.stderr
    return done


def build_wheel(tmp_path: Path) -> Path:
    """Build from a copy of what the Dockerfile copies (no ``build/`` left in the checkout)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    built = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(tmp_path / "dist"), str(src))
    # -v shows the build backend's own output: setuptools warns there about deprecated metadata
    # (a `project.license` table, license classifiers) long before it refuses it
    deprecated = [line.strip() for line in (built.stdout + built.stderr).splitlines() if "deprecat" in line.lower()]
    assert deprecated == []
    [wheel] = (tmp_path / "dist").glob("fable-*.whl")
    return wheel


def requires_dist(wheel: zipfile.ZipFile) -> set[str]:
    [metadata] = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    lines = wheel.read(metadata).decode().splitlines()
    return {
        canonicalize_name(Requirement(line.split(":", 1)[1]).name)
        for line in lines if line.startswith("Requires-Dist:")
    }


@pytest.mark.slow
def test_the_installed_wheel_has_its_migrations_and_upgrades_a_database(
    tmp_path: Path, database_url: str
) -> None:
    wheel = build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as z:
        shipped = {n.removeprefix(f"{MIGRATIONS}/") for n in z.namelist() if n.startswith(MIGRATIONS)}
        assert shipped == {"env.py", "script.py.mako", *(f"versions/{v}" for v in SOURCE_VERSIONS)}
        assert {"mcp-types", "httpx2"} <= requires_dist(z)

    site = tmp_path / "site"
    run(sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {
        **os.environ, "PYTHONPATH": str(site), "DATABASE_URL": database_url,
        "FABLE_DATA_DIR": str(tmp_path / "data"), "LLM_PROVIDER": "none",
    }

    probe = json.loads(run(sys.executable, "-c", _PROBE, cwd=elsewhere, env=env).stdout)
    assert Path(probe["package"]).is_relative_to(site)  # the installed copy, not the checkout
    assert Path(probe["alembic_dir"]).is_relative_to(site) and probe["env_py"]
    assert probe["versions"] == SOURCE_VERSIONS

    upgraded = run(sys.executable, "-c", _UPGRADE, cwd=elsewhere, env=env)
    assert "up to date" in upgraded.stderr


def imported_modules(package: Path) -> set[str]:
    """Top-level names of the absolute imports in every module of ``package``."""
    names: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.partition(".")[0])
    return names


def test_every_imported_distribution_is_declared() -> None:
    modules = set().union(*(imported_modules(ROOT / p) for p in PACKAGES))
    third_party = modules - set(sys.stdlib_module_names) - {"__future__", *PACKAGES}
    installed = packages_distributions()
    imported = {canonicalize_name(d) for m in third_party for d in installed.get(m, [m])}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {canonicalize_name(Requirement(r).name) for r in project["dependencies"]}
    assert imported - declared == set()

