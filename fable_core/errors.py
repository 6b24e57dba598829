"""The typed errors every Fable capability raises, and every surface maps once.

    FableError                   root; never raised itself
    ├── NotFound                 the row does not exist *for this caller* (404)
    │   └── UnknownTool          no tool of that name is registered
    ├── Unauthenticated          no valid credentials (401)
    ├── Forbidden                authenticated, but not allowed: e.g. a read-scope key on a write tool (403)
    ├── Conflict                 the change collides with existing state: duplicate title, stale version (409)
    ├── InvalidInput             the arguments are wrong: schema, dates, enum values, rrules (422)
    │   └── PayloadTooLarge      a title, body or request exceeds its size limit (413)
    ├── NeedsConfirmation        the action is plausible but risky; repeat it with confirmation (409)
    ├── RateLimited              too many attempts; retry later (429)
    └── Unavailable              a dependency is down or not configured: database, LLM (503)

Each error carries a human message an agent can act on and a JSON-serialisable ``details`` dict.
Surfaces translate them in exactly one place each (MCP: tool error results; REST: status + JSON
body; LLM: an error object in the tool result). Another user's rows are always ``NotFound``, never
``Forbidden``: existence must not leak.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "Conflict",
    "FableError",
    "Forbidden",
    "InvalidInput",
    "NeedsConfirmation",
    "NotFound",
    "NotOffered",
    "PayloadTooLarge",
    "RateLimited",
    "Unauthenticated",
    "Unavailable",
    "UnknownTool",
]


class FableError(Exception):
    """Root of Fable's domain errors; ``type`` is the stable name surfaces put on the wire."""

    type: ClassVar[str] = "error"
    http_status: ClassVar[int] = 500

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "message": self.message, "details": self.details}


class NotFound(FableError):
    """Raised when a row does not exist or belongs to someone the caller cannot see."""

    type = "not_found"
    http_status = 404


class UnknownTool(NotFound):
    """Raised when a surface asks the dispatcher for a tool name that is not registered."""

    type = "unknown_tool"


class NotOffered(FableError):
    """Raised when a client calls a tool its session does not offer (a toolset not enabled)."""

    type = "not_offered"
    http_status = 403


class Unauthenticated(FableError):
    """Raised when a request carries no credentials or credentials that do not verify."""

    type = "unauthenticated"
    http_status = 401


class Forbidden(FableError):
    """Raised when the caller is known but lacks the scope or role for the action."""

    type = "forbidden"
    http_status = 403


class Conflict(FableError):
    """Raised when a write collides with existing state (duplicate note, stale version, name taken)."""

    type = "conflict"
    http_status = 409


class InvalidInput(FableError):
    """Raised when arguments fail validation; ``details['errors']`` lists each problem."""

    type = "invalid_input"
    http_status = 422


class PayloadTooLarge(InvalidInput):
    """Raised when a value or body exceeds its documented size limit."""

    type = "payload_too_large"
    http_status = 413


class NeedsConfirmation(FableError):
    """Raised when an action looks like a mistake (e.g. a near-duplicate); retry with ``confirm=true``."""

    type = "needs_confirmation"
    http_status = 409


class RateLimited(FableError):
    """Raised when a client exceeds a rate limit; ``details['retry_after']`` is in seconds."""

    type = "rate_limited"
    http_status = 429


class Unavailable(FableError):
    """Raised when a dependency (database, LLM provider, SMTP) is missing or down."""

    type = "unavailable"
    http_status = 503
