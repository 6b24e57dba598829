"""Who is calling: passed explicitly to the dispatcher by every surface, never read from globals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Caller", "Credential", "Scope", "Surface"]

Scope = Literal["read", "write"]
Surface = Literal["mcp", "rest", "assistant", "cli", "web", "internal"]
Credential = Literal["session", "key", "oauth", "local"]
"""How the caller proved who it is: a signed-in browser ``session``, an API ``key``, an
``oauth`` access token, or ``local``: a process on the instance's own machine (the operator's
``fable`` command line, ``fable mcp`` over stdio, Fable's own background work)."""


@dataclass(frozen=True, slots=True)
class Caller:
    """The identity a tool runs as.

    ``scope`` is the credential's reach (a read-scope API key can only run read tools);
    ``surface`` says where the call came from, for usage logs; ``credential`` how the caller
    signed in; ``conversation_id`` and ``project_id`` are the assistant's conversation and
    workspace project, when there is one.
    """

    user_id: int
    username: str | None = None
    scope: Scope = "write"
    surface: Surface = "internal"
    role: str = "user"
    conversation_id: int | None = None
    project_id: int | None = None
    credential: Credential = "local"

    @property
    def can_write(self) -> bool:
        return self.scope == "write"

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    @property
    def in_person(self) -> bool:
        """A person in a signed-in session, or the operator on the machine: what a session-only
        tool needs (``@tool(credentials="session")``). Never an API key, an OAuth token or the
        in-app assistant acting on someone's behalf."""
        return self.credential in ("session", "local") and self.surface != "assistant"
