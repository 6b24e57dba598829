"""Who is calling: passed explicitly to the dispatcher by every surface, never read from globals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["OPERATOR_ID", "Caller", "Credential", "Scope", "Surface"]

Scope = Literal["read", "write"]
Surface = Literal["mcp", "rest", "assistant", "cli", "web", "internal"]
Credential = Literal["session", "key", "oauth", "local"]
"""How the caller proved who it is: a signed-in browser ``session``, an API ``key``, an
``oauth`` access token, or ``local``: a process on the instance's own machine (the operator's
``fable`` command line, ``fable mcp`` over stdio, Fable's own background work)."""
OPERATOR_ID = 0
"""The ``user_id`` of the operator's calls (:meth:`Caller.at_shell`): no account has it."""


@dataclass(frozen=True, slots=True)
class Caller:
    """The identity a tool runs as.

    ``scope`` is the credential's reach (a read-scope API key can only run read tools);
    ``surface`` says where the call came from, for usage logs; ``credential`` how the caller
    signed in; ``conversation_id`` and ``project_id`` are the assistant's conversation and
    workspace project, when there is one.

    What only the surface knows of how the caller reached Fable, it vets and puts here, so a
    tool never reads a request: ``session_id``, the signed-in session the call came by (a
    browser's); ``base_url``, the URL it reached Fable at, whose Host the host policy admitted
    (links shown to this person, when no public URL is set); ``address``, the client's address
    as the rate limits count it. ``operator``: the person at the instance's own shell (``fable
    user ...``), who needs no account: ``user_id`` is then :data:`OPERATOR_ID`, matching none.
    ``toolsets``: the tools its API key or OAuth connection was set to offer an MCP client
    (:mod:`fable_core.tools.toolsets`); None, the server's default.
    """

    user_id: int
    username: str | None = None
    scope: Scope = "write"
    surface: Surface = "internal"
    role: str = "user"
    conversation_id: int | None = None
    project_id: int | None = None
    credential: Credential = "local"
    session_id: int | None = None
    base_url: str | None = None
    address: str | None = None
    operator: bool = False
    toolsets: tuple[str, ...] | None = None

    @classmethod
    def at_shell(cls, name: str) -> Caller:
        """The operator at this machine's shell, named ``name`` (``cli:<system account>``): an
        admin of the instance with no account of its own."""
        return cls(user_id=OPERATOR_ID, username=name[:64], role="admin", surface="cli", credential="local",
                   operator=True)

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
