"""Who may see or change a row is decided in one module, ``fable_core.tools.access``: sharing (a later
capability) changes that module, not its callers. This test reads every other module of the three
packages and fails on any comparison of a ``user_id`` or an ``owner_id`` (Python or SQL) outside it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("fable_core", "fable_mcp", "fable_web")
ALLOWED = {
    "fable_core/tools/access.py",  # the rule's home
    "fable_core/db/models.py",  # declares the columns
}
_OWNERS = ("user_id", "owner_id")
_SQL = re.compile(r"\b(?:user|owner)_id\s*(=|<>|!=|\bIN\b)", re.IGNORECASE)


def _mentions_user_id(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr in _OWNERS) or (
        isinstance(node, ast.Name) and node.id in _OWNERS)


def _joins(node: ast.Compare) -> bool:
    """``User.id == ApiKey.user_id``: a join condition (which row belongs to which user), not a
    decision about who may see it."""
    sides = (node.left, *node.comparators)
    return any(isinstance(n, ast.Attribute) and n.attr == "id" for n in sides)


def _none_check(node: ast.Compare) -> bool:
    """``owner_id is None``: whether a row has an owner at all, not whose it is."""
    return all(isinstance(op, ast.Is | ast.IsNot) for op in node.ops) and any(
        isinstance(n, ast.Constant) and n.value is None for n in node.comparators)


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(_mentions_user_id(n) for n in (node.left, *node.comparators)) \
                and not _joins(node) and not _none_check(node):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL.search(node.value):
            found.append(f"{node.lineno}: SQL {node.value.strip()[:60]!r}")
        elif isinstance(node, ast.Call) and any(k.arg in _OWNERS for k in node.keywords) and \
                isinstance(node.func, ast.Attribute) and node.func.attr == "filter_by":
            found.append(f"{node.lineno}: {ast.unparse(node)[:60]}")
    return found


def test_owners_are_compared_only_in_the_access_module() -> None:
    offenders = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative in ALLOWED or "/alembic/" in relative:
                continue
            found = _violations(path)
            if found:
                offenders[relative] = found
    assert offenders == {}, "ownership decided outside fable_core/tools/access.py:\n" + "\n".join(
        f"{path}:{line}" for path, lines in offenders.items() for line in lines)


def test_the_rule_sees_what_it_must(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('select(Note).where(Note.user_id == caller.user_id)\n'
                      'text("SELECT 1 FROM notes WHERE user_id = :u")\n'
                      'if buffer.owner != caller.user_id: pass\n'
                      'query.filter_by(user_id=3)\n'
                      'Note(user_id=3)\n'
                      'select(ApiKey).join(User, User.id == ApiKey.user_id)\n')
    assert len(_violations(sample)) == 4
