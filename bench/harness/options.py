"""A bench's command line, read from a dataclass of its options.

Each bench declares its options once, as a dataclass whose fields are typed and defaulted::

    @dataclass(frozen=True)
    class Options:
        notes: int = 10_000
        runs: int = option(100, "calls of each kind")

``notes_per_user`` becomes ``--notes-per-user``. The types a command line can carry are
``int``, ``float``, ``str``, ``Path`` (each optionally ``| None``), ``bool`` (a flag) and
``list[int]`` / ``list[str]`` (one or more values). :func:`parser` builds the argparse parser,
:func:`argv` turns options back into arguments (the runner passes a bench its quick options
that way, to a process of its own). One place for both, so the two never disagree; an
unsupported type is refused when the parser is built, which the test suite does for every bench.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from pathlib import Path
from typing import Any

__all__ = ["argv", "option", "parser", "values"]

_SCALARS: dict[Any, Any] = {int: int, float: float, str: str, Path: Path}


def option(default: Any, help: str | None = None, *, choices: tuple[Any, ...] | None = None) -> Any:  # noqa: A002
    """A field with a help text (and the values it may take)."""
    metadata = {"help": help, "choices": choices}
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _kind(hint: Any) -> tuple[Any, bool]:
    """The argparse type of a field's annotation and whether it takes a list of values."""
    args = [a for a in typing.get_args(hint) if a is not types.NoneType]
    if typing.get_origin(hint) in (types.UnionType, typing.Union) and len(args) == 1:
        hint = args[0]
    if typing.get_origin(hint) is list and typing.get_args(hint)[0] in _SCALARS:
        return _SCALARS[typing.get_args(hint)[0]], True
    if hint is bool or hint in _SCALARS:
        return (bool if hint is bool else _SCALARS[hint]), False
    raise TypeError(f"a bench option cannot be of type {hint!r}")


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    if f.default is dataclasses.MISSING:
        raise TypeError(f"bench option {f.name!r} needs a default")
    return f.default


def parser(options: type[Any], prog: str, description: str) -> argparse.ArgumentParser:
    """The parser of ``options`` (a dataclass type), without the harness's own options."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    hints = typing.get_type_hints(options)
    for f in dataclasses.fields(options):
        kind, many = _kind(hints[f.name])
        help_, default = f.metadata.get("help"), _default(f)
        if kind is bool:
            p.add_argument(_flag(f.name), action="store_true", default=default, help=help_)
        else:
            p.add_argument(_flag(f.name), type=kind, nargs="+" if many else None, default=default, help=help_,
                           choices=f.metadata.get("choices"))
    return p


def values(options: type[Any], namespace: argparse.Namespace) -> Any:
    """An instance of ``options`` from a parsed command line."""
    return options(**{f.name: getattr(namespace, f.name) for f in dataclasses.fields(options)})


def argv(chosen: Any) -> list[str]:
    """The arguments that give ``chosen`` (only the fields that differ from their defaults)."""
    found: list[str] = []
    for f in dataclasses.fields(chosen):
        value = getattr(chosen, f.name)
        if value == _default(f):
            continue
        if isinstance(value, bool):
            found += [_flag(f.name)] if value else []
        elif isinstance(value, list):
            found += [_flag(f.name), *map(str, value)]
        elif value is not None:
            found += [_flag(f.name), str(value)]
    return found
