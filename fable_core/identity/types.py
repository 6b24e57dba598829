"""The argument types of accounts, shared by the tools and the sign-in routes: one definition
of what a username, a password, an address or a token may be, so every surface and OpenAPI
refuse the same input the same way."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from fable_core.admin.mail_settings import Email
from fable_core.identity.passwords import MAX_LENGTH

__all__ = ["Email", "Password", "RowId", "Token", "Username"]

Username = Annotated[str, StringConstraints(min_length=1, max_length=64)]
Password = Annotated[str, StringConstraints(min_length=1, max_length=MAX_LENGTH)]
Token = Annotated[str, StringConstraints(min_length=1, max_length=200)]
RowId = Annotated[int, Field(ge=1, le=2**31 - 1)]
