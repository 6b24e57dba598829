"""The tool registry and dispatcher: how a capability is declared once and run everywhere."""

from fable_core.tools.context import Context
from fable_core.tools.registry import REGISTRY, Annotations, Registry, Route, Tool, tool

__all__ = ["REGISTRY", "Annotations", "Context", "Registry", "Route", "Tool", "tool"]
