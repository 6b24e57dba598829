"""The shape of fable_core as an import graph: no circle of modules at run time, and type
annotations (``TYPE_CHECKING``) circle only inside one room, never across rooms (the layers
themselves are `lint-imports`' contract in pyproject.toml: the kernel below every domain)."""

from __future__ import annotations

import grimp
import pytest


def _circles(exclude_type_checking: bool) -> list[list[str]]:
    graph = grimp.build_graph("fable_core", include_external_packages=False, cache_dir=None,
                              exclude_type_checking_imports=exclude_type_checking)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    return strongly_connected(edges)


def strongly_connected(edges: dict[str, list[str]]) -> list[list[str]]:
    """The groups of more than one node that reach each other (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, following = work[-1]
            step = next(following, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(edges.get(step, ()))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def _room(module: str) -> str:
    return ".".join(module.split(".")[:2])


def test_no_module_imports_itself_back_at_run_time() -> None:
    assert _circles(exclude_type_checking=True) == []


def test_annotations_circle_only_inside_one_room() -> None:
    across = [group for group in _circles(exclude_type_checking=False) if len({_room(m) for m in group}) > 1]
    assert across == []


@pytest.mark.parametrize(("edges", "expected"), [
    ({"a": ["b"], "b": ["a"], "c": ["a"]}, [["a", "b"]]),
    ({"a": ["b"], "b": ["c"], "c": []}, []),
    ({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["d"]}, [["a", "b", "c"]]),
])
def test_the_circle_finder_finds_circles(edges: dict[str, list[str]], expected: list[list[str]]) -> None:
    assert strongly_connected(edges) == expected
