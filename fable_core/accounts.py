"""Users and API keys: creation, password hashing and key verification.

Passwords are hashed with argon2id. API keys look like ``fable_<prefix>_<secret>``; only their
SHA-256 hash is stored, with the short prefix kept for display. Keys are scoped ``read`` or
``write``. The first user of an instance becomes its admin.
"""

from __future__ import annotations

import functools
import hashlib
import re
import secrets
from datetime import UTC, datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.account_tokens import issue_token, redeem_token
from fable_core.caller import Caller, Scope
from fable_core.db.models import AccountToken, ApiKey, InstanceSetting, User
from fable_core.errors import Conflict, Forbidden, InvalidInput, NotFound, Unauthenticated

__all__ = [
    "INVITE_TTL",
    "RESET_TTL",
    "authenticate",
    "caller_for_key",
    "change_password",
    "check_password",
    "create_api_key",
    "create_invitation",
    "create_user",
    "find_user",
    "hash_password",
    "list_api_keys",
    "register_user",
    "registration_open",
    "request_password_reset",
    "reset_password",
    "revoke_api_key",
    "set_registration_open",
    "verify_password",
]

# Held for the rest of a transaction that creates a user: the "is the name free" check and the
# "first user is admin" count must see every user committed before.
_USER_CREATION_LOCK = 0x0F_AB_1E_01

_USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{1,63}$")
_hasher = PasswordHasher()
MIN_PASSWORD = 8
INVITE_TTL = timedelta(days=7)
RESET_TTL = timedelta(hours=1)
_REGISTRATION = "open_registration"


@functools.cache
def _dummy_hash() -> str:
    """A real hash to verify against when the user is unknown, which keeps login timing uniform.

    Made on first use, not at import: hashing costs a tenth of a second and 64 MiB, which every
    process (``fable mcp`` starting for Claude Desktop, say) would otherwise pay.
    """
    return _hasher.hash("not-a-password-of-anyone")


def check_password(password: str) -> None:
    """Refuse a password that is too short or absurdly long (InvalidInput)."""
    if len(password) < MIN_PASSWORD:
        raise InvalidInput(f"password must be at least {MIN_PASSWORD} characters", field="password")
    if len(password) > 1024:
        raise InvalidInput("password is longer than 1024 characters", field="password")


def hash_password(password: str) -> str:
    check_password(password)
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
    """Create a user; the first one on the instance is an admin unless told otherwise.

    Creations are serialised by a transaction lock (the one :func:`register_user` takes), so the
    check that the name is free and the count that makes the first user an admin see every user
    committed before: two processes creating the same user at once get one row and a Conflict,
    never a unique violation from the database.
    """
    if not _USERNAME.match(username or ""):
        raise InvalidInput(
            f"username {username!r} must be 2-64 letters, digits, '.', '_' or '-'", field="username"
        )
    await session.execute(select(func.pg_advisory_xact_lock(_USER_CREATION_LOCK)))
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


async def authenticate(session: AsyncSession, username: str, password: str) -> User:
    """The active user with this name and password; Unauthenticated (same message) otherwise."""
    user = await session.scalar(select(User).where(func.lower(User.username) == (username or "").lower()))
    if user is None or not user.is_active:
        verify_password(_dummy_hash(), password)
        raise Unauthenticated("wrong username or password")
    if not verify_password(user.password_hash, password):
        raise Unauthenticated("wrong username or password")
    return user


async def _set_password(session: AsyncSession, user: User, new_password: str) -> None:
    """Store a new hash and bump ``session_version``, which signs out every existing session."""
    user.password_hash = hash_password(new_password)
    user.session_version = User.session_version + 1
    await session.flush()
    await session.refresh(user, ["session_version"])


async def change_password(
    session: AsyncSession, user_id: int, current_password: str, new_password: str
) -> User:
    """Change a password after checking the current one; every other session ends."""
    user = await session.get(User, user_id, with_for_update=True)
    if user is None:
        raise Unauthenticated("no such user")
    if not verify_password(user.password_hash, current_password):
        raise InvalidInput("the current password is wrong", field="current_password")
    await _set_password(session, user, new_password)
    return user


async def registration_open(session: AsyncSession, default: bool) -> bool:
    """Whether anyone may register: the admin's run-time choice, else the configured default."""
    value = await session.scalar(
        select(InstanceSetting.value).where(InstanceSetting.key == _REGISTRATION)
    )
    return default if value is None else bool(value)


async def set_registration_open(session: AsyncSession, is_open: bool) -> None:
    stmt = pg_insert(InstanceSetting).values(key=_REGISTRATION, value=is_open)
    await session.execute(
        stmt.on_conflict_do_update(
            index_elements=[InstanceSetting.key], set_={"value": is_open, "updated_at": func.now()}
        )
    )


async def register_user(
    session: AsyncSession,
    username: str,
    password: str,
    *,
    email: str | None = None,
    invitation: str | None = None,
    open_by_default: bool = True,
) -> User:
    """Self-service sign-up: the first account always, later ones if open or invited.

    An invitation is redeemed in the same transaction, so it works exactly once.
    """
    await session.execute(select(func.pg_advisory_xact_lock(_USER_CREATION_LOCK)))  # first-user race
    first = not await session.scalar(select(func.count(User.id)))
    if invitation:
        await redeem_token(session, "invite", invitation)
    elif not first and not await registration_open(session, open_by_default):
        raise Forbidden("registration is closed; ask an admin for an invitation")
    return await create_user(session, username, password, email=email)


async def create_invitation(
    session: AsyncSession, admin: User | int, email: str | None = None
) -> tuple[AccountToken, str]:
    """An invitation token (valid :data:`INVITE_TTL`, once) that admits one registration."""
    admin_id = admin if isinstance(admin, int) else admin.id
    return await issue_token(session, "invite", INVITE_TTL, created_by=admin_id, email=email)


async def request_password_reset(
    session: AsyncSession, login: str
) -> tuple[User, str] | None:
    """A reset token for the user with this username or email, or None if there is no such
    user with an email address (callers answer the same either way: existence must not leak)."""
    login = (login or "").strip().lower()
    user = await session.scalar(
        select(User).where(
            (func.lower(User.username) == login) | (func.lower(User.email) == login),
            User.is_active.is_(True),
        ).limit(1)
    )
    if user is None or not user.email:
        return None
    _, token = await issue_token(session, "reset", RESET_TTL, user_id=user.id)
    return user, token


async def reset_password(session: AsyncSession, token: str, new_password: str) -> User:
    """Set a new password with a reset token; the token is spent and other sessions end."""
    check_password(new_password)  # refuse a bad password before spending the token
    row = await redeem_token(session, "reset", token)
    user = await session.get(User, row.user_id, with_for_update=True)
    if user is None or not user.is_active:
        raise InvalidInput("this password reset link is unknown", field="token", reason="unknown")
    await _set_password(session, user, new_password)
    return user


async def list_api_keys(session: AsyncSession, user_id: int) -> list[ApiKey]:
    rows = await session.scalars(
        select(ApiKey).where(ApiKey.user_id == user_id).order_by(ApiKey.created_at.desc(), ApiKey.id.desc())
    )
    return list(rows)


async def revoke_api_key(session: AsyncSession, user_id: int, key_id: int) -> ApiKey:
    """Delete one of the user's keys; another user's key is NotFound."""
    row = await session.scalar(
        delete(ApiKey).where(ApiKey.id == key_id, ApiKey.user_id == user_id).returning(ApiKey)
    )
    if row is None:
        raise NotFound(f"API key {key_id} not found", api_key_id=key_id)
    return row
