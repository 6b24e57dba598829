"""Users and API keys: creation, password hashing and key verification.

Passwords are hashed with argon2id. API keys look like ``fable_<prefix>_<secret>``; only their
SHA-256 hash is stored, with the short prefix kept for display. Keys are scoped ``read`` or
``write``. The first user of an instance becomes its admin.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import UTC, datetime

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.caller import Caller, Scope
from fable_core.db.models import ApiKey, User
from fable_core.errors import Conflict, InvalidInput, NotFound, Unauthenticated

__all__ = [
    "caller_for_key",
    "create_api_key",
    "create_user",
    "find_user",
    "hash_password",
    "verify_password",
]

_USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{1,63}$")
_hasher = PasswordHasher()
MIN_PASSWORD = 8


def hash_password(password: str) -> str:
    if len(password) < MIN_PASSWORD:
        raise InvalidInput(f"password must be at least {MIN_PASSWORD} characters", field="password")
    if len(password) > 1024:
        raise InvalidInput("password is longer than 1024 characters", field="password")
    return _hasher.hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    if not password_hash:
        return False
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


async def create_user(
    session: AsyncSession,
    username: str,
    password: str | None = None,
    *,
    email: str | None = None,
    role: str | None = None,
) -> User:
    """Create a user; the first one on the instance is an admin unless told otherwise."""
    if not _USERNAME.match(username or ""):
        raise InvalidInput(
            f"username {username!r} must be 2-64 letters, digits, '.', '_' or '-'", field="username"
        )
    taken = await session.scalar(select(User.id).where(func.lower(User.username) == username.lower()))
    if taken is not None:
        raise Conflict(f"username {username!r} is taken", field="username")
    if role is None:
        role = "admin" if not await session.scalar(select(func.count(User.id))) else "user"
    user = User(
        username=username,
        email=email,
        password_hash=hash_password(password) if password is not None else None,
        role=role,
    )
    session.add(user)
    await session.flush()
    return user


async def find_user(session: AsyncSession, username: str) -> User:
    user = await session.scalar(select(User).where(func.lower(User.username) == username.lower()))
    if user is None:
        raise NotFound(f"no user named {username!r}", username=username)
    return user


def _key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


async def create_api_key(
    session: AsyncSession, user_id: int, name: str, scope: Scope = "write"
) -> tuple[ApiKey, str]:
    """Create a key; returns the row and the full key, which is never retrievable again."""
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise InvalidInput("an API key needs a name of 1-100 characters", field="name")
    if scope not in ("read", "write"):
        raise InvalidInput(f"scope must be 'read' or 'write', not {scope!r}", field="scope")
    prefix = secrets.token_hex(4)
    key = f"fable_{prefix}_{secrets.token_urlsafe(32)}"
    row = ApiKey(user_id=user_id, name=name, prefix=prefix, key_hash=_key_hash(key), scope=scope)
    session.add(row)
    await session.flush()
    return row, key


async def caller_for_key(session: AsyncSession, key: str, surface: str) -> Caller:
    """Resolve a bearer key to its caller and stamp its last use; Unauthenticated if unknown."""
    row = (
        await session.execute(
            select(ApiKey, User)
            .join(User, User.id == ApiKey.user_id)
            .where(ApiKey.key_hash == _key_hash(key.strip()), User.is_active.is_(True))
        )
    ).first()
    if row is None:
        raise Unauthenticated("invalid or revoked API key")
    api_key, user = row
    now = datetime.now(UTC)
    if api_key.last_used_at is None or (now - api_key.last_used_at).total_seconds() > 60:
        await session.execute(update(ApiKey).where(ApiKey.id == api_key.id).values(last_used_at=now))
    return Caller(
        user_id=user.id,
        username=user.username,
        scope=api_key.scope,  # type: ignore[arg-type]
        surface=surface,  # type: ignore[arg-type]
        role=user.role,
    )
