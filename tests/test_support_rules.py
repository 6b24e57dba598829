"""The shared test helpers stay the only copies (``tests/support/``).

Shared helpers are modules of tests/support (``support.web``, ``support.chat``...), never a
``*_helpers.py`` beside the tests that use it. Outside tests/support, no file under tests/ runs
its own uvicorn (``support.servers`` does), defines a ``PASSWORD`` or spells out the test password
(``support.users.PASSWORD``), reads an ``UPDATE_*`` variable to rewrite a snapshot
(``support.snapshots``), imports a ``conftest`` module (fixtures come from pytest, helpers from
modules), or imports ``fake_llm`` from anywhere but ``support.fake_llm``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from support.users import PASSWORD

TESTS = Path(__file__).resolve().parent
SUPPORT = TESTS / "support"


def offences(source: str) -> list[str]:
    """What in ``source`` copies a shared helper, one line each (``line N: what``)."""
    found: list[str] = []

    def add(node: ast.AST, what: str) -> None:
        found.append(f"line {getattr(node, 'lineno', '?')}: {what}")

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                parts = name.split(".")
                if parts[0] == "uvicorn":
                    add(node, "imports uvicorn: run servers with support.servers")
                if "conftest" in parts:
                    add(node, "imports a conftest module: move the helper to a module")
                if parts[0] == "fake_llm":
                    add(node, "imports fake_llm from outside tests/support: import support.fake_llm")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and (
                node.id == "PASSWORD" or node.id.endswith("_PASSWORD")):
            add(node, f"defines {node.id}: import PASSWORD from support.users")
        elif isinstance(node, ast.Constant) and node.value == PASSWORD:
            add(node, "spells out the test password: use support.users.PASSWORD")
        elif isinstance(node, ast.Call) and _reads_environment(node.func) and any(
                isinstance(arg, ast.Constant) and str(arg.value).startswith("UPDATE_") for arg in node.args):
            add(node, "reads an UPDATE_* variable itself: use support.snapshots")
    return found


def _reads_environment(func: ast.expr) -> bool:
    """``os.environ.get(...)``, ``environ.get(...)`` or ``os.getenv(...)``."""
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr == "getenv":
        return True
    owner = func.value
    return func.attr == "get" and (
        (isinstance(owner, ast.Attribute) and owner.attr == "environ")
        or (isinstance(owner, ast.Name) and owner.id == "environ"))


def test_no_file_outside_support_copies_a_shared_helper() -> None:
    report = {
        str(path.relative_to(TESTS)): problems
        for path in sorted(TESTS.rglob("*.py"))
        if SUPPORT not in path.parents and path != Path(__file__).resolve()
        if (problems := offences(path.read_text(encoding="utf-8")))
    }
    assert report == {}, report


def test_the_rules_catch_what_they_are_for() -> None:
    """Each copy the rules exist to stop is reported (else the test above proves nothing)."""
    samples = {
        "import uvicorn\n": "imports uvicorn",
        "from uvicorn.server import Server\n": "imports uvicorn",
        "from conftest import Call\n": "imports a conftest module",
        "from web.conftest import RowCounts\n": "imports a conftest module",
        "import fake_llm\n": "fake_llm from outside",
        'PASSWORD = "hunter22"\n': "defines PASSWORD",
        'ADMIN_PASSWORD: str = "hunter22"\n': "defines ADMIN_PASSWORD",
        f"login(password={PASSWORD!r})\n": "spells out the test password",
        'if os.environ.get("UPDATE_SNAPSHOTS"):\n    pass\n': "UPDATE_* variable",
        'flag = os.getenv("UPDATE_DOCS")\n': "UPDATE_* variable",
    }
    for source, expected in samples.items():
        problems = offences(source)
        assert len(problems) == 1 and expected in problems[0], (source, problems)
    fine = ("from support.servers import serve\nfrom support.users import PASSWORD\n"
            'login(password=PASSWORD)\nos.environ.get("HOME")\nimport support.fake_llm\n')
    assert offences(fine) == []


def strays(paths: list[Path]) -> list[str]:
    """Modules outside tests/support that are neither tests, conftests nor a child process a
    test starts (``*_child.py``): a helper there is one directory's copy, imported by bare name."""
    return [str(p.relative_to(TESTS)) for p in paths
            if SUPPORT not in p.parents and p.parent != TESTS / "support"
            and not p.name.startswith("test_") and p.name not in ("conftest.py", "__init__.py")
            and not p.name.endswith("_child.py")]


def test_shared_helpers_live_in_support_only() -> None:
    assert strays(sorted(TESTS.rglob("*.py"))) == []


def test_the_stray_rule_catches_a_helper_beside_its_tests() -> None:
    assert strays([TESTS / "web" / "web_helpers.py", TESTS / "web" / "test_rest.py",
                   TESTS / "core" / "embedded_child.py", SUPPORT / "web.py",
                   TESTS / "web" / "conftest.py"]) == ["web/web_helpers.py"]
