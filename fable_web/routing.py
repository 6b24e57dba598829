"""An /api route that carries its own API description, so the OpenAPI document is built by walking
the app's routes (:mod:`fable_web.openapi`) and no operation is declared twice.

A tool's route describes itself from the registry (``Doc(tool=...)``); a hand-written route (one
that cannot be a tool: it sets the session cookie, answers before sign-in, or speaks a protocol
of its own) names its summary, request and response models and status where it is declared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from starlette.routing import Route

from fable_core.tools.registry import Tool

__all__ = ["ApiRoute", "Doc"]


@dataclass(frozen=True, slots=True)
class Doc:
    """What OpenAPI says of an operation."""

    summary: str = ""
    tag: str = ""
    body: type[BaseModel] | None = None  # the request model a hand-written handler validates with
    result: type[BaseModel] | None = None  # the model its answer is made from (None: no JSON body, or not described)
    status: int = 200
    public: bool = False  # no credentials needed
    session_only: bool = False  # refuses API keys: credentials are managed from a signed-in session
    body_required: bool = True
    tool: Tool | None = None  # a tool's own route, described from the registry
    stream: bool = False  # the SSE form of a streaming tool's route
    any_tool: bool = False  # POST /api/tools/{name}


class ApiRoute(Route):
    """A Starlette route with its :class:`Doc`."""

    def __init__(self, path: str, endpoint: Callable[..., Any], *, methods: list[str], doc: Doc,
                 name: str | None = None) -> None:
        super().__init__(path, endpoint, methods=methods, name=name)
        self.doc = doc
