"""Who is calling: passed explicitly to the dispatcher by every surface, never read from globals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Caller", "Scope", "Surface"]

Scope = Literal["read", "write"]
Surface = Literal["mcp", "rest", "assistant", "cli", "web", "internal"]


@dataclass(frozen=True, slots=True)
class Caller:
    """The identity a tool runs as.

    ``scope`` is the credential's reach (a read-scope API key can only run read tools);
    ``surface`` says where the call came from, for usage logs; ``conversation_id`` and
    ``project_id`` are the assistant's conversation and workspace project, when there is one.
    """

    user_id: int
    username: str | None = None
    scope: Scope = "write"
    surface: Surface = "internal"
    role: str = "user"
    conversation_id: int | None = None
    project_id: int | None = None

    @property
    def can_write(self) -> bool:
        return self.scope == "write"

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"
