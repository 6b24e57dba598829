"""An /api route that carries its own API description, so the OpenAPI document is built by walking
the app's routes (:mod:`fable_web.openapi`) and no operation is declared twice.

A tool's route describes itself from the registry (``Doc(tool=...)``); a hand-written route (the
account, key and admin endpoints) names its summary, request model and status where the route
is declared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from starlette.routing import Route

from fable_core.tools.registry import Tool

__all__ = ["ApiRoute", "Doc", "admin_doc"]


@dataclass(frozen=True, slots=True)
class Doc:
    """What OpenAPI says of an operation."""

    summary: str = ""
    tag: str = ""
    body: type[BaseModel] | None = None  # the request model a hand-written handler validates with
    status: int = 200
    public: bool = False  # no credentials needed
    session_only: bool = False  # refuses API keys: credentials are managed from a signed-in session
    body_required: bool = True
    tool: Tool | None = None  # a tool's own route, described from the registry
    stream: bool = False  # the SSE form of a streaming tool's route
    any_tool: bool = False  # POST /api/tools/{name}


def admin_doc(summary: str, body: type[BaseModel] | None = None, *, status: int = 200,
              body_required: bool = True) -> Doc:
    """An admin route's description: tagged admin, session only (no API key may administer)."""
    return Doc(f"{summary} (admin)", "admin", body, status=status, session_only=True, body_required=body_required)


class ApiRoute(Route):
    """A Starlette route with its :class:`Doc`."""

    def __init__(self, path: str, endpoint: Callable[..., Any], *, methods: list[str], doc: Doc,
                 name: str | None = None) -> None:
        super().__init__(path, endpoint, methods=methods, name=name)
        self.doc = doc
