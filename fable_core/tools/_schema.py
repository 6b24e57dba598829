"""Build a tool's argument model and JSON Schemas from its signature and docstring.

Parameters become flat top-level properties (never one nested model argument). A parameter
annotated with :class:`~fable_core.tools.context.Context` is injected by the dispatcher and
never appears in a schema. A parameter's description comes from the docstring's ``Args:``
section (specific to this tool) or, failing that, from its ``Annotated[..., Field(description=...)]``
type (shared wording such as ``NoteId``'s); constraints always come from the type.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from functools import cached_property
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from fable_core.tools.binary import Blob, Download, is_binary, is_spooled
from fable_core.tools.context import Context

__all__ = ["ToolSignature", "build_signature", "split_docstring"]

_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Raises|Examples?):\s*$")
_ARG_LINE = re.compile(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")


class ToolSignature:
    """What the registry learns from a function: its argument model, output model, schemas."""

    def __init__(
        self,
        arguments: type[BaseModel],
        output: type[BaseModel],
        context_param: str | None,
        binary_param: str | None = None,
        binary_spooled: bool = False,
    ) -> None:
        self.arguments = arguments
        self.output = output
        self.context_param = context_param
        self.binary_param = binary_param  # the Binary argument a REST body may carry raw
        self.binary_spooled = binary_spooled  # ... spooled to a file (a BinaryFile: an Upload)
        self.blob = issubclass(output, (Blob, Download))  # served as raw bytes where a surface can
        self.download = issubclass(output, Download)  # ... and streamed
        self.media_types: tuple[str, ...] = output.media_types if issubclass(output, Download) else ()

    # The JSON Schemas are made when first read, not as each tool registers: pydantic takes about
    # 2 ms a tool, 0.4 s of every start for 180 tools, and a start that answers one call reads a
    # few of them (all of them only for a tool list).
    @cached_property
    def strict_schema(self) -> dict[str, Any]:
        return _clean(_inline_refs(self.arguments.model_json_schema()))

    @cached_property
    def input_schema(self) -> dict[str, Any]:
        advertised: dict[str, Any] = _advertised(self.strict_schema)
        return advertised

    @cached_property
    def output_schema(self) -> dict[str, Any]:
        return _clean(self.output.model_json_schema(mode="serialization"))


def split_docstring(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The description (docstring up to the first section) and the ``Args:`` descriptions."""
    doc = inspect.cleandoc(fn.__doc__ or "")
    description: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in doc.splitlines():
        match = _SECTION.match(line.strip())
        if match and not line.startswith(" "):
            section, current = match.group(1), None
            continue
        if section is None:
            description.append(line)
        elif section in ("Args", "Arguments", "Parameters"):
            arg = _ARG_LINE.match(line)
            if arg:
                current = arg.group(1)
                args[current] = arg.group(2).strip()
            elif current and line.strip():
                args[current] += " " + line.strip()
    return "\n".join(description).strip(), args


def build_signature(fn: Callable[..., Any], name: str) -> ToolSignature:
    hints = get_type_hints(fn, include_extras=True)
    _, arg_docs = split_docstring(fn)
    fields: dict[str, Any] = {}
    context_param: str | None = None
    binary_param: str | None = None
    binary_spooled = False
    for pname, param in inspect.signature(fn).parameters.items():
        annotation = hints.get(pname)
        if annotation is Context:
            context_param = pname
            continue
        if annotation is None:
            raise TypeError(f"tool {name!r}: parameter {pname!r} has no type annotation")
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(f"tool {name!r}: parameter {pname!r} must be a plain keyword parameter")
        if is_binary(annotation):
            if binary_param is not None:
                raise TypeError(f"tool {name!r}: one Binary parameter at most ({binary_param!r}, {pname!r})")
            binary_param, binary_spooled = pname, is_spooled(annotation)
        fields[pname] = (annotation, _field(param.default, arg_docs.get(pname)))
    output = hints.get("return")
    if not (inspect.isclass(output) and issubclass(output, BaseModel)):
        raise TypeError(f"tool {name!r} must return a pydantic model, not {output!r}")
    model_name = "".join(part.title() for part in name.split("_")) + "Arguments"
    arguments = create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)
    return ToolSignature(arguments, output, context_param, binary_param, binary_spooled)


def _field(default: Any, description: str | None) -> FieldInfo:
    """The parameter's default, plus its docstring description when it has one.

    ``description`` is only passed when present: an explicit ``None`` would erase the
    description an ``Annotated`` type alias carries (``NoteId``, ``Limit``).
    """
    if isinstance(default, FieldInfo):
        return default
    value = ... if default is inspect.Parameter.empty else default
    field: FieldInfo = Field(value, description=description) if description else Field(value)
    return field


def _clean(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's auto-generated per-property titles; they restate the property names."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            out = {}
            for key, value in node.items():
                if key == "properties" and isinstance(value, dict):
                    out[key] = {k: _without_title(strip(v)) for k, v in value.items()}
                else:
                    out[key] = strip(value)
            return out
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    cleaned: dict[str, Any] = _nullable_as_type_list(strip(schema))
    cleaned.pop("title", None)
    return cleaned


_NULL = {"type": "null"}


def _nullable_as_type_list(node: Any) -> Any:
    """Write pydantic's ``anyOf: [{"type": T, ...}, {"type": "null"}]`` as ``"type": [T, "null"]``.

    The two mean the same whenever the other branch has one type and no ``enum``/``const``
    (its other keywords, such as ``format`` or ``items``, never apply to null). The short form
    is what OpenAI-style tool schemas use, costs fewer tokens in every tool list an LLM reads,
    and is about half the work for a client that validates each result against its schema.
    """
    if isinstance(node, list):
        return [_nullable_as_type_list(v) for v in node]
    if not isinstance(node, dict):
        return node
    node = {k: _nullable_as_type_list(v) for k, v in node.items()}
    branches = node.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and _NULL in branches:
        other = branches[1 - branches.index(_NULL)]
        if isinstance(other, dict) and isinstance(other.get("type"), str) and not {"enum", "const"} & other.keys():
            rest = {k: v for k, v in node.items() if k != "anyOf"}
            return {**other, **rest, "type": [other["type"], "null"]}
    return node


_INT32_MAX = 2**31 - 1
_LONG = 1000  # a maxLength above this is a safety limit, not something a caller must plan for


def _advertised(node: Any) -> Any:
    """An argument schema as clients read it: what a caller may pass, and nothing it can infer.

    An optional parameter whose default is null is written without the default and without
    ``null`` among its types: omitting it says the same, and every tool list an LLM reads pays
    for each ``"default": null``. (Validation still accepts an explicit null.) A parameter whose
    null means something other than "omitted" keeps it. Defaults that say nothing (``""``,
    ``[]``, ``false``), the titles of nested objects, bounds no sane caller meets (an id's
    1..2**31-1, a body's million characters) and ``additionalProperties: false`` are left out
    too; validation still applies them, and names an unknown argument with the one it was
    probably meant to be.
    """
    if isinstance(node, list):
        return [_advertised(v) for v in node]
    if not isinstance(node, dict):
        return node
    is_id = node.get("maximum") == _INT32_MAX
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _advertised(prop) for name, prop in value.items()}
        elif not _says_nothing(key, value, is_id):
            out[key] = _advertised(value)
    if "default" in node and node["default"] is None:
        types = out.get("type")
        if isinstance(types, list) and "null" in types:
            rest = [t for t in types if t != "null"]
            out["type"] = rest[0] if len(rest) == 1 else rest
        branches = out.get("anyOf")
        if isinstance(branches, list) and _NULL in branches:
            rest_branches = [b for b in branches if b != _NULL]
            del out["anyOf"]
            if len(rest_branches) == 1:
                out = {**rest_branches[0], **out}
            else:
                out["anyOf"] = rest_branches
    return out


def _says_nothing(key: str, value: Any, is_id: bool) -> bool:
    if key == "default":
        return value is None or value is False or value in ("", [], {})
    if key in ("minimum", "maximum"):
        return is_id
    if key == "maxLength":
        return isinstance(value, int) and value > _LONG
    if key == "additionalProperties":
        return value is False
    return key == "title" and isinstance(value, str)


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Replace ``$ref``s to ``$defs`` by the definitions themselves, so that an argument that is a
    list of objects (``import_notes``'s notes) reads as one self-contained schema: some LLM tool
    callers and MCP hosts do not follow references. Argument models are never recursive."""
    defs = schema.get("$defs", {})

    def inline(node: Any, seen: tuple[str, ...] = ()) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref.removeprefix("#/$defs/")
                if name in seen:
                    raise TypeError(f"recursive argument type {name!r} cannot be inlined")
                rest = {k: v for k, v in node.items() if k != "$ref"}
                return {**inline(defs[name], (*seen, name)), **inline(rest, seen)}
            return {k: inline(v, seen) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [inline(v, seen) for v in node]
        return node

    return inline(schema) if defs else schema


def _without_title(prop: Any) -> Any:
    if isinstance(prop, dict):
        prop = {k: v for k, v in prop.items() if k != "title"}
    return prop
