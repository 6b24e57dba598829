"""What people are shown of accounts, as typed results: a person's own account (:class:`UserView`)
and the answers that carry it. Shared by the account tools and the sign-in routes a tool cannot
be (they set the session cookie), so every surface shows an account the same way and OpenAPI
describes it once."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from fable_core.db.models import User

__all__ = ["Message", "SignedIn", "UserResult", "UserView"]


class UserView(BaseModel):
    """What a user sees of their own account."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    username: str
    email: str | None = Field(description="Null: no address.")
    email_verified: bool
    role: str
    created_at: datetime | None = None

    @classmethod
    def of(cls, user: User) -> UserView:
        return cls(id=user.id, username=user.username, email=user.email,
                   email_verified=user.email_verified_at is not None, role=user.role, created_at=user.created_at)


class UserResult(BaseModel):
    user: UserView


class SignedIn(UserResult):
    """A new session's answer: the account and the session's CSRF token (the cookie holds the rest)."""

    csrf_token: str


class Message(BaseModel):
    """What happened, in words (work that goes on after the answer: a mail on its way)."""

    message: str
