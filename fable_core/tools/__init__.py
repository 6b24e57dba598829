"""The kernel: the tool registry and dispatcher (how a capability is declared once and run
everywhere), the runtime and its parts, background jobs, paging, results, the user's clock, setting
keys and the access rules."""

from fable_core.tools.context import Context
from fable_core.tools.registry import REGISTRY, Annotations, Follow, Registry, Route, Tool, tool

__all__ = ["REGISTRY", "Annotations", "Context", "Follow", "Registry", "Route", "Tool", "tool"]
